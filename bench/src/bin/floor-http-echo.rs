//! `floor-http-echo`: the HTTP floor, with no MCP in it: hyper's HTTP/1.1 server (one task
//! a connection, TCP_NODELAY) and serde_json. It answers a POSTed JSON-RPC `initialize`
//! with a minimal result and an `Mcp-Session-Id`, a notification with `202`, and any other
//! request with `echo`'s result for its `text`, as one `application/json` body. What no
//! server can go below on this machine: the baseline `compare --http` divides by.
//!
//! Listens on a free loopback port and prints `floor-http-echo: serving at
//! http://ADDR/mcp` on stderr.

use std::convert::Infallible;

use http_body_util::{BodyExt as _, Full};
use hyper::{Request, Response, StatusCode, body::Bytes, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    eprintln!(
        "floor-http-echo: serving at http://{}/mcp",
        listener.local_addr()?
    );
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            let served = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(answer))
                .await;
            if let Err(error) = served {
                eprintln!("floor-http-echo: connection: {error}");
            }
        });
    }
}

/// One POST's answer.
async fn answer(
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return Ok(status(StatusCode::BAD_REQUEST)),
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let Some(id) = message.get("id").cloned() else {
        return Ok(status(StatusCode::ACCEPTED));
    };
    let (result, session) = if message["method"] == "initialize" {
        let result = json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "floor-http-echo", "version": "0"},
        });
        (result, true)
    } else {
        let text = message["params"]["arguments"]["text"].clone();
        let result = json!({"content": [{"type": "text", "text": text}], "isError": false});
        (result, false)
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
    let mut response = Response::new(Full::new(Bytes::from(answer.to_string())));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    if session {
        response.headers_mut().insert(
            "mcp-session-id",
            hyper::header::HeaderValue::from_static("floor"),
        );
    }
    Ok(response)
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}
