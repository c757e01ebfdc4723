//! The writer: messages serialized and queued, batched into one write, async or blocking,
//! and the answered ids released as their bytes are written.

use std::{
    io::{self, Write as _},
    pin::Pin,
    sync::{Arc, atomic::Ordering},
};

use rmcp::{
    RoleServer,
    model::{ErrorData, JsonRpcMessage, RequestId},
    service::TxJsonRpcMessage,
};
use tokio::{
    io::{AsyncWrite, AsyncWriteExt as _},
    sync::{mpsc, oneshot},
};

use super::state::{Outgoing, Shared};
use crate::transport::decode::ErrorReply;

/// The writer stops adding queued messages to a batch past this size, so one batch does
/// not grow without bound while a slow reader holds it up.
pub(super) const BATCH_BYTES: usize = 1 << 20;

/// The request an outgoing message answers.
pub(super) fn answered_request(message: &TxJsonRpcMessage<RoleServer>) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Response(response) => Some(&response.id),
        JsonRpcMessage::Error(error) => error.id.as_ref(),
        _ => None,
    }
}

/// One write's worth of queued messages.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) bytes: Vec<u8>,
    pub(super) acks: Vec<oneshot::Sender<()>>,
    pub(super) close: bool,
}

impl Batch {
    pub(super) fn add(&mut self, item: Outgoing) {
        match item {
            Outgoing::Line(line) => {
                if self.bytes.is_empty() {
                    // The common case: one line a batch, taken as is.
                    self.bytes = line;
                } else {
                    self.bytes.extend_from_slice(&line);
                }
            }
            Outgoing::Flush(ack) => self.acks.push(ack),
            Outgoing::Close(ack) => {
                self.acks.push(ack);
                self.close = true;
            }
        }
    }

    pub(super) fn full(&self) -> bool {
        self.close || self.bytes.len() >= BATCH_BYTES
    }

    /// After a write: give back the written bytes' count, acknowledge, and keep a
    /// modest buffer for the next batch.
    pub(super) fn done(&mut self, shared: &Shared) {
        shared
            .unwritten
            .fetch_sub(self.bytes.len(), Ordering::AcqRel);
        shared.written.notify_waiters();
        for ack in self.acks.drain(..) {
            let _ = ack.send(());
        }
        self.bytes.clear();
        if self.bytes.capacity() > 4 * BATCH_BYTES {
            self.bytes.shrink_to(BATCH_BYTES);
        }
    }
}

/// The writer over a non-blocking output: one write for everything queued.
pub(super) async fn write_async(
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
    mut sink: Pin<Box<dyn AsyncWrite + Send>>,
    shared: Arc<Shared>,
) {
    let mut batch = Batch::default();
    while let Some(first) = queue.recv().await {
        batch.add(first);
        while !batch.full() {
            match queue.try_recv() {
                Ok(item) => batch.add(item),
                Err(_) => break,
            }
        }
        if !batch.bytes.is_empty() {
            let written = match sink.write_all(&batch.bytes).await {
                Ok(()) => sink.flush().await,
                Err(error) => Err(error),
            };
            if let Err(error) = written {
                tracing::warn!(target: "fusion::transport", %error, "stdout failed; stopping");
                shared.output_failed(error);
                break;
            }
        }
        let close = batch.close;
        batch.done(&shared);
        if close {
            let _ = sink.shutdown().await;
            break;
        }
    }
    shared.output_closed.set();
}

/// The writer over a blocking output (a file, a terminal), on its own thread.
pub(super) fn write_blocking(
    mut queue: mpsc::UnboundedReceiver<Outgoing>,
    mut sink: Box<dyn io::Write + Send>,
    shared: &Shared,
) {
    let mut batch = Batch::default();
    while let Some(first) = queue.blocking_recv() {
        batch.add(first);
        while !batch.full() {
            match queue.try_recv() {
                Ok(item) => batch.add(item),
                Err(_) => break,
            }
        }
        if !batch.bytes.is_empty()
            && let Err(error) = sink.write_all(&batch.bytes).and_then(|()| sink.flush())
        {
            tracing::warn!(target: "fusion::transport", %error, "stdout failed; stopping");
            shared.output_failed(error);
            break;
        }
        let close = batch.close;
        batch.done(shared);
        if close {
            break;
        }
    }
    shared.output_closed.set();
}

/// Queues one serialized line for the writer and counts its bytes as unwritten.
pub(super) fn queue_line(
    out: &mpsc::UnboundedSender<Outgoing>,
    shared: &Shared,
    line: Vec<u8>,
) -> Result<(), io::Error> {
    let bytes = line.len();
    shared.unwritten.fetch_add(bytes, Ordering::AcqRel);
    out.send(Outgoing::Line(line)).map_err(|_| {
        shared.unwritten.fetch_sub(bytes, Ordering::AcqRel);
        io::Error::new(io::ErrorKind::BrokenPipe, "stdout is closed")
    })
}

/// One message as a line: its JSON and a newline. A message that cannot be serialized
/// (impossible with rmcp's types) becomes an error answer to its request, so the request is
/// still answered once.
pub(super) fn serialize(message: &TxJsonRpcMessage<RoleServer>) -> Vec<u8> {
    let mut line = Vec::with_capacity(256);
    match serde_json::to_writer(&mut line, message) {
        Ok(()) => {}
        Err(error) => {
            tracing::error!(target: "fusion::transport", %error, "could not serialize a message");
            line.clear();
            if let Some(id) = answered_request(message) {
                let reply = ErrorReply {
                    id: Some(id.clone()),
                    error: ErrorData::internal_error(
                        "the server could not serialize its answer",
                        None,
                    ),
                };
                if serde_json::to_writer(&mut line, &reply).is_err() {
                    line.clear();
                }
            }
            if line.is_empty() {
                return line;
            }
        }
    }
    line.push(b'\n');
    line
}
