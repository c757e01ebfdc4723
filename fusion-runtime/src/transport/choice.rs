//! Stdio or Streamable HTTP, picked from the command line: what every server's `main`
//! would otherwise parse by hand.

use std::process::ExitCode;

#[cfg(feature = "http")]
use super::HttpOptions;
use crate::setup::builder::ServerBuilder;

/// The transport a server is served on, as [`ServerBuilder::serve`] picks it from the
/// command line.
#[derive(Debug)]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "one value a process, read once at start: boxing the options buys nothing"
)]
pub enum Transport {
    /// JSON-RPC lines on stdin and stdout: what a client that starts the server uses.
    Stdio,
    /// Streamable HTTP with these options.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    Http(HttpOptions),
}

impl Transport {
    /// Reads the transport from command-line arguments (without the program's name):
    /// - none of the flags below: stdio;
    /// - `--http PORT` (or `--http=PORT`): Streamable HTTP on `127.0.0.1:PORT` (`0` picks a
    ///   free port, printed on stderr); `--http ADDR:PORT` binds that address;
    /// - `--stateless`, with `--http`: no sessions, each request on its own (replicas
    ///   behind a load balancer);
    /// - `--trusted-proxies LIST` (or `--trusted-proxies=LIST`), with `--http`: the proxies
    ///   in front, comma-separated addresses or ranges, whose `X-Forwarded-For` names the
    ///   client ([`HttpOptions::trusted_proxies`]; an entry that is neither stops the start
    ///   with [`EXIT_CONFIG`](crate::exit::EXIT_CONFIG)).
    ///
    /// Other arguments are left to the program, which may take flags of its own.
    ///
    /// # Errors
    /// `--http` without a port or address, or with one that does not parse; `--stateless`
    /// or `--trusted-proxies` without `--http`, `--trusted-proxies` without its list;
    /// `--http` in a build without the `http` feature. The message says what was expected.
    ///
    /// ```
    /// use fusion_runtime::Transport;
    ///
    /// let args = |line: &str| line.split_whitespace().map(String::from).collect::<Vec<_>>();
    /// assert!(matches!(Transport::from_args(args("--verbose")), Ok(Transport::Stdio)));
    /// assert!(matches!(Transport::from_args(args("--http 8931")), Ok(Transport::Http(_))));
    /// assert!(Transport::from_args(args("--http")).is_err());
    /// assert!(Transport::from_args(args("--stateless")).is_err());
    /// assert!(matches!(
    ///     Transport::from_args(args("--http 8931 --trusted-proxies 127.0.0.1,10.0.0.0/8")),
    ///     Ok(Transport::Http(_))
    /// ));
    /// assert!(Transport::from_args(args("--trusted-proxies 127.0.0.1")).is_err());
    /// ```
    pub fn from_args<I>(args: I) -> Result<Self, String>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let mut args = args.into_iter().map(Into::into);
        let mut http: Option<String> = None;
        let mut stateless = false;
        let mut proxies: Option<String> = None;
        while let Some(arg) = args.next() {
            if arg == "--http" {
                http = Some(args.next().ok_or(
                    "`--http` takes a port or an address: `--http 8931` or `--http 0.0.0.0:8931`",
                )?);
            } else if let Some(value) = arg.strip_prefix("--http=") {
                http = Some(value.to_owned());
            } else if arg == "--stateless" {
                stateless = true;
            } else if arg == "--trusted-proxies" {
                proxies = Some(args.next().ok_or(
                    "`--trusted-proxies` takes a comma-separated list: `--trusted-proxies 127.0.0.1,10.0.0.0/8`",
                )?);
            } else if let Some(value) = arg.strip_prefix("--trusted-proxies=") {
                proxies = Some(value.to_owned());
            }
        }
        match http {
            None if stateless => Err(
                "`--stateless` goes with `--http PORT`: stdio has no sessions to leave out".into(),
            ),
            None if proxies.is_some() => Err(
                "`--trusted-proxies` goes with `--http PORT`: stdio has no proxy in front".into(),
            ),
            None => Ok(Self::Stdio),
            Some(value) => Self::http(&value, stateless, proxies.as_deref()),
        }
    }

    #[cfg(feature = "http")]
    fn http(value: &str, stateless: bool, proxies: Option<&str>) -> Result<Self, String> {
        let options = if let Ok(port) = value.parse::<u16>() {
            HttpOptions::default().port(port)
        } else if let Ok(addr) = value.parse::<std::net::SocketAddr>() {
            HttpOptions::default().addr(addr)
        } else {
            return Err(format!(
                "`--http {value}`: expected a port (0 to 65535) or an address such as `0.0.0.0:8931`"
            ));
        };
        let options = match proxies {
            Some(list) => options.trusted_proxies(list.split(',')),
            None => options,
        };
        Ok(Self::Http(options.stateless(stateless)))
    }

    #[cfg(not(feature = "http"))]
    fn http(_: &str, _: bool, _: Option<&str>) -> Result<Self, String> {
        Err("`--http`: this build of fusion has no `http` feature; serve over stdio, or enable the feature".into())
    }
}

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Builds the server and serves it on the transport the command line picks
    /// ([`Transport::from_args`]: stdio unless `--http PORT`), until the client leaves or
    /// a signal stops it. A command line it cannot read exits with
    /// [`EXIT_USAGE`](crate::exit::EXIT_USAGE) and says why on stderr.
    ///
    /// ```no_run
    /// use fusion_runtime::prelude::*;
    ///
    /// /// Add two integers.
    /// #[mcp_tool(read_only)]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// // `calc` serves stdio; `calc --http 8931` serves http://127.0.0.1:8931/mcp.
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> std::process::ExitCode {
    ///     Server::builder("calc", "1.0.0").tool(add).serve().await
    /// }
    /// ```
    pub async fn serve(self) -> ExitCode {
        match Transport::from_args(std::env::args().skip(1)) {
            Ok(transport) => self.serve_on(transport).await,
            Err(problem) => {
                eprintln!("{}: {problem}", self.name);
                ExitCode::from(crate::exit::EXIT_USAGE)
            }
        }
    }

    /// Builds the server and serves it on `transport`.
    pub async fn serve_on(self, transport: Transport) -> ExitCode {
        match transport {
            Transport::Stdio => self.serve_stdio().await,
            #[cfg(feature = "http")]
            Transport::Http(options) => self.serve_http_with(options).await,
        }
    }
}
