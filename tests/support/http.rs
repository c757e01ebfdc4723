//! Streamable HTTP below any client library: a server process that reports its URL
//! ([`HttpServer`]), and raw HTTP/1.1 exchanges ([`raw_http`], [`try_raw_http`]).

use std::{
    fmt::Write as _,
    io::{Read, Write as _},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use super::process::{drain, kill_tree, send_signal, spawn_in_group};

/// A server process serving Streamable HTTP, started with `--port 0` (or `--http 0`) so that
/// it picks a free port and reports its URL on stderr. Killed (its whole process group) when
/// dropped, so every exit path of a test ends it.
pub(crate) struct HttpServer {
    child: Option<Child>,
    stderr: Arc<Mutex<Vec<u8>>>,
    url: String,
    addr: std::net::SocketAddr,
}

impl HttpServer {
    /// Spawns `command` and waits (at most `timeout`) for its start-up line
    /// (`... over Streamable HTTP at http://ADDR/PATH ...`). Panics with its stderr when it
    /// exits or stays silent.
    pub(crate) fn start(mut command: Command, timeout: Duration) -> Self {
        command.stdout(Stdio::null());
        let mut child = spawn_in_group(&mut command);
        let stderr = drain(child.stderr.take()).buf;
        let mut server = Self {
            child: Some(child),
            stderr,
            url: String::new(),
            addr: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let deadline = Instant::now() + timeout;
        loop {
            let text = server.stderr();
            // Only a whole line: the pipe may deliver the start-up line in pieces.
            if let Some(url) = text
                .split("over Streamable HTTP at ")
                .nth(1)
                .filter(|rest| rest.contains('\n'))
                .and_then(|rest| rest.split_whitespace().next())
            {
                server.url = url.to_owned();
                let authority = url
                    .strip_prefix("http://")
                    .and_then(|rest| rest.split('/').next())
                    .unwrap_or_default();
                server.addr = authority
                    .parse()
                    .unwrap_or_else(|e| panic!("bad address {authority:?} in {url}: {e}"));
                return server;
            }
            if let Some(child) = server.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("{command:?} exited ({status}) before serving:\n{text}");
            }
            if Instant::now() >= deadline {
                panic!("{command:?} did not report its URL within {timeout:?}:\n{text}");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The MCP endpoint, e.g. `http://127.0.0.1:PORT/mcp`.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub(crate) fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// What the server wrote to stderr so far.
    pub(crate) fn stderr(&self) -> String {
        let bytes = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Sends `signal` (e.g. `"TERM"`) to the server process.
    pub(crate) fn signal(&self, signal: &str) {
        send_signal(self.pid(), signal);
    }

    /// Waits at most `timeout` for the process to exit; its status, or `None` (still running).
    pub(crate) fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut()?;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() >= deadline => return None,
                Ok(None) => thread::sleep(Duration::from_millis(20)),
                Err(_) => return None,
            }
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_tree(&mut child);
        }
    }
}

/// A raw HTTP/1.1 exchange, for checks below any client library.
#[derive(Debug)]
pub(crate) struct RawResponse {
    pub(crate) status: u16,
    /// Header lines, names lower-cased.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl RawResponse {
    /// The JSON-RPC message it carries: the body, or the first `data:` event with data of
    /// an SSE stream.
    pub(crate) fn message(&self) -> serde_json::Value {
        self.try_message().unwrap_or_else(|error| panic!("{error}"))
    }

    /// [`message`](Self::message), or why there is none.
    pub(crate) fn try_message(&self) -> Result<serde_json::Value, String> {
        let text = self
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| !data.is_empty())
            .map_or_else(|| self.body.clone(), str::to_owned);
        serde_json::from_str(&text).map_err(|error| format!("not JSON ({error}): {self:?}"))
    }

    /// The first value of header `name` (lower-case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// The headers every MCP POST carries (`Content-Type`, `Accept` for JSON and SSE), plus
/// `extra`.
pub(crate) fn mcp_headers<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    headers.extend_from_slice(extra);
    headers
}

/// A POST of `body` to `/mcp` with the headers an MCP client sends, plus `extra`.
pub(crate) fn post_mcp(
    addr: std::net::SocketAddr,
    extra: &[(&str, &str)],
    body: &str,
    timeout: Duration,
) -> RawResponse {
    raw_http(
        addr,
        "POST",
        "/mcp",
        &mcp_headers(extra),
        body.as_bytes(),
        timeout,
    )
}

/// Sends `method path` to `addr` with `headers` (a `Host` and `Connection: close` are added
/// unless given) and `body`, and reads the whole response (at most `timeout`). Chunked bodies
/// are decoded.
pub(crate) fn raw_http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> RawResponse {
    let mut stream = connect(addr, timeout).unwrap_or_else(|e| panic!("{e}"));
    let bytes = request_bytes(addr, method, path, headers, body);
    // The server may answer (413) and close before reading the whole body: a failed write
    // is not the test's failure, the response says what happened.
    let _ = stream.write_all(&bytes);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse_response(&raw).unwrap_or_else(|| {
        panic!(
            "no HTTP response from {addr} for {method} {path}: {:?}",
            String::from_utf8_lossy(&raw)
        )
    })
}

/// A connection to `addr` whose connect, reads and writes each take at most `timeout`.
fn connect(addr: std::net::SocketAddr, timeout: Duration) -> Result<std::net::TcpStream, String> {
    let stream = std::net::TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    stream.set_read_timeout(Some(timeout)).ok();
    stream.set_write_timeout(Some(timeout)).ok();
    Ok(stream)
}

/// The bytes of an HTTP/1.1 request (a `Host` and `Connection: close` are added unless
/// given).
fn request_bytes(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    let has = |name: &str| {
        headers
            .iter()
            .any(|(key, _)| key.eq_ignore_ascii_case(name))
    };
    if !has("host") {
        let _ = write!(request, "Host: {addr}\r\n");
    }
    if !has("connection") {
        request.push_str("Connection: close\r\n");
    }
    for (name, value) in headers {
        let _ = write!(request, "{name}: {value}\r\n");
    }
    if !body.is_empty() || method == "POST" {
        let _ = write!(request, "Content-Length: {}\r\n", body.len());
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn parse_response(raw: &[u8]) -> Option<RawResponse> {
    let split = raw.windows(4).position(|window| window == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split_whitespace().nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    if chunked {
        let mut decoded = Vec::new();
        let mut rest = body.as_slice();
        while let Some(end) = rest.windows(2).position(|window| window == b"\r\n") {
            let size_text = String::from_utf8_lossy(&rest[..end]).into_owned();
            let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
            rest = &rest[end + 2..];
            if size == 0 || rest.len() < size {
                decoded.extend_from_slice(&rest[..size.min(rest.len())]);
                break;
            }
            decoded.extend_from_slice(&rest[..size]);
            rest = rest.get(size + 2..).unwrap_or_default();
        }
        body = decoded;
    }
    Some(RawResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// [`raw_http`] for exchanges that may fail: a connection that cannot be made, or closes
/// without an HTTP response, is an `Err` with what happened instead of a panic.
pub(crate) fn try_raw_http(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> Result<RawResponse, String> {
    let mut stream = connect(addr, timeout)?;
    let bytes = request_bytes(addr, method, path, headers, body);
    stream
        .write_all(&bytes)
        .map_err(|e| format!("{method} {path} to {addr}: cannot send: {e}"))?;
    let mut raw = Vec::new();
    let read = stream.read_to_end(&mut raw);
    parse_response(&raw).ok_or_else(|| match read {
        Err(e) => format!("{method} {path} to {addr}: no response: {e}"),
        Ok(_) => format!(
            "{method} {path} to {addr}: no HTTP response: {:?}",
            String::from_utf8_lossy(&raw)
        ),
    })
}

/// A connection to `addr` from `source` (bound before connecting).
pub(crate) fn connect_from(
    source: std::net::IpAddr,
    addr: std::net::SocketAddr,
) -> std::io::Result<std::net::TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(std::net::SocketAddr::new(source, 0))?;
        tokio::time::timeout(Duration::from_secs(5), socket.connect(addr))
            .await
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
    })?;
    let stream = stream.into_std()?;
    stream.set_nonblocking(false)?;
    Ok(stream)
}

/// Sends `request` (a whole HTTP/1.1 request, with `Connection: close`) on `stream` and
/// reads the response to its end, at most `limit`.
pub(crate) fn exchange(
    mut stream: std::net::TcpStream,
    request: &str,
    limit: Duration,
) -> std::io::Result<String> {
    use std::io::{Read as _, Write as _};
    stream.set_read_timeout(Some(limit))?;
    stream.set_write_timeout(Some(limit))?;
    stream.write_all(request.as_bytes())?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// A loopback port nobody listens on now (bound, read, and let go: a server started on it
/// next takes it).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}
