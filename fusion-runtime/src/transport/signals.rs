//! The signals that stop a server: SIGTERM (a supervisor, a container runtime) and SIGINT
//! (Ctrl-C). Both transports drain on the first and stop at once on the second.

/// SIGTERM and SIGINT (Ctrl-C), as a stream of names.
pub(super) struct Signals {
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    pub(super) fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let listen = |kind: SignalKind, name: &str| match signal(kind) {
                Ok(stream) => Some(stream),
                Err(error) => {
                    tracing::warn!(target: "fusion::server", %error, signal = name, "cannot listen for the signal");
                    None
                }
            };
            Self {
                terminate: listen(SignalKind::terminate(), "SIGTERM"),
                interrupt: listen(SignalKind::interrupt(), "SIGINT"),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    /// The next signal's name (never resolves when none can be received).
    #[cfg(unix)]
    pub(super) async fn next(&mut self) -> &'static str {
        async fn recv(signal: Option<&mut tokio::signal::unix::Signal>) {
            match signal {
                Some(signal) => {
                    if signal.recv().await.is_none() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            () = recv(self.terminate.as_mut()) => "SIGTERM",
            () = recv(self.interrupt.as_mut()) => "SIGINT",
        }
    }

    #[cfg(not(unix))]
    pub(super) async fn next(&mut self) -> &'static str {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "ctrl-c",
            Err(_) => std::future::pending().await,
        }
    }
}
