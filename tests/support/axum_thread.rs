//! An axum router served on a free loopback port from a thread and runtime of its own, so
//! that blocking tests can use it (the test authorization server, the OTLP receiver).
//! Dropping it stops the server (its runtime, and with it every connection, is dropped:
//! idle keep-alive connections must not hold the test) and joins its thread, within a
//! bound.

use std::{
    net::SocketAddr,
    thread,
    time::{Duration, Instant},
};

/// A server running on the thread's runtime until it ends or the thread is stopped.
pub(crate) type Serving = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// How long dropping the server waits for its thread.
const STOP_WAIT: Duration = Duration::from_secs(5);

pub(crate) struct AxumThread {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl AxumThread {
    /// Binds a free loopback port and serves what `router` makes for it (it is handed the
    /// port's URL, `http://127.0.0.1:<port>`, which some documents must name).
    pub(crate) fn start(name: &str, router: impl FnOnce(&str) -> axum::Router) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        let app = router(&format!(
            "http://{}",
            listener.local_addr().expect("a bound address")
        ));
        Self::serve(name, listener, move |listener| {
            Box::pin(async move {
                let _ = axum::serve(listener, app).await;
            })
        })
    }

    /// Serves on a free loopback port with a server of another kind (tonic's, for gRPC):
    /// `serve` is handed the bound listener, on the thread's runtime.
    pub(crate) fn start_with(
        name: &str,
        serve: impl FnOnce(tokio::net::TcpListener) -> Serving + Send + 'static,
    ) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        Self::serve(name, listener, serve)
    }

    fn serve(
        name: &str,
        listener: std::net::TcpListener,
        serve: impl FnOnce(tokio::net::TcpListener) -> Serving + Send + 'static,
    ) -> Self {
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let addr = listener.local_addr().expect("a bound address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                runtime.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                    tokio::select! {
                        () = serve(listener) => {}
                        _ = stopped => {}
                    }
                });
            })
            .expect("a thread for the test server");
        Self {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The server's URL, `http://127.0.0.1:<port>`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for AxumThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let deadline = Instant::now() + STOP_WAIT;
            while !thread.is_finished() && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(10));
            }
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}
