//! Helpers shared by the integration tests that drive built binaries and external clients.
//!
//! Use from a test file with `mod support;`. Not every test uses every helper, hence the
//! `dead_code` allowance.
//!
//! - [`target_dir`]: cargo's target directory (where `scripts/python-env` puts its venv).
//! - [`example_binary`]: path of a built example, e.g. `examples/quickstart`.
//! - [`python`]: the venv's Python, or `None` (skip) outside CI when it is missing.
//! - [`run_with_timeout`]: run a command to completion with a hard deadline, capturing output.
//! - [`stdio_peer::StdioPeer`]: raw JSON-RPC lines to an example server over stdio.

#![allow(dead_code)]

pub(crate) mod stdio_peer;

use std::{
    ffi::OsStr,
    fmt::Write as _,
    io::{Read, Write as _},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex},
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

/// Cargo's target directory: `$CARGO_TARGET_DIR` when set (a relative value is taken from the
/// workspace root, which is where `cargo test` runs test binaries), else `<workspace>/target`.
pub(crate) fn target_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// Path of the example binary `name`, built in the same profile as the running test.
///
/// Test executables live in `<target>/<profile>/deps/`; examples in
/// `<target>/<profile>/examples/`. `cargo test --test X` does not build examples, so this
/// panics with a hint to run `cargo build --examples` when the binary is missing.
pub(crate) fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("unexpected test executable location: {}", exe.display()));
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let path = profile_dir.join("examples").join(file);
    assert!(
        path.is_file(),
        "example binary `{name}` not found at {}: run `cargo build --examples` \
         (same profile as the tests) first",
        path.display()
    );
    path
}

/// A workspace package's binary (such as `fusion-demo`), built in the tests' profile by
/// `cargo build --workspace --bins`. Panics with what to run when it is missing.
#[allow(dead_code)]
pub(crate) fn package_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("unexpected test executable location: {}", exe.display()));
    let path = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "binary `{name}` not found at {}: run `cargo build --workspace --bins` (same profile as the tests) first",
        path.display()
    );
    path
}

/// The Python interpreter of the test venv, if there is one.
///
/// Looks at `$FUSION_PYTHON` first (it must then exist, or this panics), then at
/// `<target>/fusion-venv/bin/python`, which `scripts/python-env` creates with the pinned MCP
/// Python SDK. When neither exists: if `$CI` is `true` this panics (CI must not skip silently);
/// otherwise it prints a loud skip note to stderr (uncaptured) and returns `None`, so a test can do
/// `let Some(python) = support::python() else { return };`.
pub(crate) fn python() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os("FUSION_PYTHON").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        assert!(
            path.is_file(),
            "FUSION_PYTHON points at {}, which does not exist",
            path.display()
        );
        return Some(path);
    }
    let venv = target_dir().join("fusion-venv");
    let path = if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    if path.is_file() {
        return Some(path);
    }
    let hint = format!(
        "no Python venv at {} (and FUSION_PYTHON is unset): run `scripts/python-env` to create it",
        venv.display()
    );
    missing_tool(&hint)
}

/// What [`run_with_timeout`] observed.
#[derive(Debug)]
pub(crate) struct RunOutput {
    /// The exit status, or `None` if the process had to be killed at the deadline.
    pub(crate) status: Option<ExitStatus>,
    /// Everything the process wrote to stdout (lossy UTF-8).
    pub(crate) stdout: String,
    /// Everything the process wrote to stderr (lossy UTF-8).
    pub(crate) stderr: String,
    /// Whether the deadline passed and the process was killed.
    pub(crate) timed_out: bool,
    /// Wall time from spawn to exit (or to the kill).
    pub(crate) elapsed: Duration,
}

impl RunOutput {
    /// True when the process exited by itself with status 0.
    pub(crate) fn success(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }

    /// A multi-line account (status, stdout, stderr) for assertion messages.
    pub(crate) fn report(&self) -> String {
        let mut out = String::new();
        let status = match (self.timed_out, self.status) {
            (true, _) => "killed at the timeout".to_owned(),
            (false, Some(status)) => status.to_string(),
            (false, None) => "unknown".to_owned(),
        };
        let _ = writeln!(out, "status: {status} after {:.1?}", self.elapsed);
        let _ = writeln!(out, "--- stdout ---\n{}", self.stdout.trim_end());
        let _ = writeln!(out, "--- stderr ---\n{}", self.stderr.trim_end());
        let _ = write!(out, "--- end ---");
        out
    }
}

/// Runs `command` to completion, but for at most `timeout`, capturing stdout and stderr.
///
/// Stdin is set to null and stdout/stderr to pipes (drained on threads, so a chatty process
/// cannot block). On Unix the process gets its own process group, and at the deadline the
/// whole group is killed (SIGKILL), so subprocesses it spawned (e.g. MCP servers) go too;
/// elsewhere only the process itself is killed. Panics only if the process cannot be spawned.
pub(crate) fn run_with_timeout(mut command: Command, timeout: Duration) -> RunOutput {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        command.process_group(0);
    }
    let start = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {command:?}: {e}"));
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());

    let poll = Duration::from_millis(20);
    let (status, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (Some(status), false),
            Ok(None) if start.elapsed() >= timeout => {
                kill_tree(&mut child);
                break (None, true);
            }
            Ok(None) => thread::sleep(poll),
            Err(e) => panic!("waiting for {command:?}: {e}"),
        }
    };
    let elapsed = start.elapsed();

    // A grandchild that inherited the pipes can keep them open after the child exits:
    // give the readers a short grace period, then take whatever they have.
    let grace = Instant::now() + Duration::from_secs(5);
    let stdout = collect(stdout, grace);
    let mut stderr = collect(stderr, grace);
    if timed_out {
        let _ = write!(
            stderr,
            "\n[run_with_timeout: killed after {timeout:?}: {command:?}]"
        );
    }
    RunOutput {
        status,
        stdout,
        stderr,
        timed_out,
        elapsed,
    }
}

/// A pipe being read to its end on a thread, into a shared buffer.
struct Drain {
    buf: Arc<Mutex<Vec<u8>>>,
    thread: Option<JoinHandle<()>>,
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> Drain {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let thread = pipe.map(|mut pipe| {
        let buf = Arc::clone(&buf);
        thread::spawn(move || {
            let mut chunk = [0_u8; 8192];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(&chunk[..n]),
                }
            }
        })
    });
    Drain { buf, thread }
}

fn collect(drain: Drain, deadline: Instant) -> String {
    if let Some(thread) = drain.thread {
        while !thread.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
    let bytes = drain.buf.lock().unwrap_or_else(|e| e.into_inner());
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Sends `signal` (e.g. `"TERM"`) to process `pid`, with the system's `kill`.
pub(crate) fn send_signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn kill_tree(child: &mut Child) {
    #[cfg(unix)]
    {
        // The child leads its own process group (process_group(0) above).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The directory of a Node.js ≥ 22 with `npx` (the conformance suite and the MCP Inspector
/// CLI need it), if there is one.
///
/// Looks at `$FUSION_NODE_BIN` first (it must then hold `node`, or this panics), then at
/// `<target>/node22/bin`, which `scripts/node-env` creates, then at the `node` on `PATH` when
/// it is version 22 or later. When none fits: under `CI=true` this panics; otherwise it prints
/// a loud skip note and returns `None`. Put the directory first on `PATH` for the commands.
pub(crate) fn node_bin() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os("FUSION_NODE_BIN").filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(explicit);
        assert!(
            dir.join("node").is_file(),
            "FUSION_NODE_BIN points at {}, which holds no `node`",
            dir.display()
        );
        return Some(dir);
    }
    let local = target_dir().join("node22").join("bin");
    if node_major(&local.join("node")).is_some_and(|major| major >= 22)
        && local.join("npx").exists()
    {
        return Some(local);
    }
    if let Some(dir) = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).find(|dir| {
            node_major(&dir.join("node")).is_some_and(|major| major >= 22)
                && dir.join("npx").exists()
        })
    }) {
        return Some(dir);
    }
    let hint = format!(
        "no Node.js >= 22 with npx at {} (FUSION_NODE_BIN is unset, and none on PATH): run `scripts/node-env`",
        local.display()
    );
    missing_tool(&hint)
}

/// The major version of the `node` at `path`, if it runs.
fn node_major(path: &Path) -> Option<u32> {
    if !path.is_file() {
        return None;
    }
    let mut command = Command::new(path);
    command.arg("--version");
    let out = run_with_timeout(command, Duration::from_secs(20));
    let version = out.stdout.trim().strip_prefix('v')?.to_owned();
    version.split('.').next()?.parse().ok()
}

/// `PATH` with `dir` first.
pub(crate) fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_else(|_| dir.as_os_str().to_owned())
}

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
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt as _;
            command.process_group(0);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {command:?}: {e}"));
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
            if let Some(url) = text
                .split("over Streamable HTTP at ")
                .nth(1)
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
    /// The first value of header `name` (lower-case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
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
    use std::net::TcpStream;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"));
    stream.set_read_timeout(Some(timeout)).ok();
    stream.set_write_timeout(Some(timeout)).ok();
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

/// The nginx binary, if there is one (for `tests/scale_out.rs`).
///
/// Looks at `$FUSION_NGINX` first (it must then exist, or this panics), then at `nginx` on
/// `PATH`, then at `/usr/sbin/nginx` (where the Debian package puts it; `scripts/nginx-env`
/// installs it). When none is there: under `CI=true` this panics; otherwise it prints a loud
/// skip note and returns `None`.
pub(crate) fn nginx() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os("FUSION_NGINX").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        assert!(
            path.is_file(),
            "FUSION_NGINX points at {}, which does not exist",
            path.display()
        );
        return Some(path);
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("nginx"))
            .find(|candidate| candidate.is_file())
    });
    if let Some(path) = on_path.or_else(|| {
        let sbin = PathBuf::from("/usr/sbin/nginx");
        sbin.is_file().then_some(sbin)
    }) {
        return Some(path);
    }
    let hint = "no nginx (FUSION_NGINX is unset, none on PATH or at /usr/sbin/nginx): run `scripts/nginx-env` (as root; installs the Debian package nginx)";
    missing_tool(hint)
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
    use std::net::TcpStream;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    stream.set_read_timeout(Some(timeout)).ok();
    stream.set_write_timeout(Some(timeout)).ok();
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

/// What a test does when an external tool it drives is missing: under `CI=true` it fails
/// (CI must not skip silently); otherwise it prints a loud skip note and returns `None`.
fn missing_tool<T>(hint: &str) -> Option<T> {
    if std::env::var_os("CI").is_some_and(|v| v == OsStr::new("true")) {
        panic!("{hint} (CI=true, so this test fails instead of skipping)");
    }
    // Written to the stderr handle rather than with eprintln!, which libtest captures: the
    // note shows even without --nocapture.
    let bar = "=".repeat(78);
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n{bar}\nSKIPPED: {hint}\n{bar}\n"
    );
    None
}
