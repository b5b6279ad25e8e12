//! The run's NATS servers as the controller and the workers use them, through a server's death.
//!
//! A client connects to any of the servers given (and those they announce) and, when its server
//! dies, reconnects to another by itself. What it had in flight is not its to finish, so:
//!
//! * a publish is tried again until a server says it stored it ([`publish_stored`]): the
//!   message carries an ID, so a try the server had stored already is stored once;
//! * a durable consumer's messages ([`Inputs`]) are taken up again when their pull fails or goes
//!   quiet (its consumer's leader died with its server, or a new one was elected), with a short
//!   idle heartbeat so a lost pull is noticed within seconds; what the dead pull had been handed
//!   and not acknowledged comes again after the ack wait;
//! * the JetStream API does not answer while its servers elect a leader: every call is tried
//!   again.

use super::{js_err, ClusterConfig, ClusterError, Result};
use async_nats::jetstream::consumer::{self, pull, PullConsumer};
use async_nats::jetstream::{self, context, Context, ErrorCode};
use futures::StreamExt;
use std::time::{Duration, Instant};

/// How long a JetStream API request or a publish waits for its answer before it is tried
/// again: a server that died with it, or a group without a leader, never answers.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// How long a pull request waits on the server before the client asks again.
const PULL_EXPIRES: Duration = Duration::from_secs(5);
/// The server's sign of life to a waiting pull: two missed and the pull is taken up again.
const PULL_HEARTBEAT: Duration = Duration::from_secs(1);

/// A JetStream context on any of `cfg`'s servers, trying for `patience` while they start.
/// `who` names the connection in the servers' monitoring (`/connz`).
pub(crate) async fn connect(cfg: &ClusterConfig, who: &str, patience: Duration) -> Result<Context> {
    let started = Instant::now();
    let name = who.to_string();
    loop {
        let who = name.clone();
        let options = async_nats::ConnectOptions::new()
            .name(format!("canary {who} ({})", cfg.run))
            .event_callback(move |event| {
                let who = who.clone();
                async move {
                    match event {
                        async_nats::Event::Connected => tracing::info!("{who}: NATS {event}"),
                        _ => tracing::warn!("{who}: NATS {event}"),
                    }
                }
            });
        match options.connect(cfg.servers.as_slice()).await {
            Ok(client) => {
                let mut js = jetstream::new(client);
                js.set_timeout(ANSWER_WITHIN);
                return Ok(js);
            }
            Err(e) if started.elapsed() >= patience => {
                return Err(ClusterError::Connect {
                    url: cfg.servers.join(","),
                    error: e.to_string(),
                })
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// Publishes `payload` on `subject` with message ID `id` and waits for the server to store it
/// (a repeat of the ID within the duplicate window is stored once).
async fn publish_once(js: &Context, subject: &str, id: &str, payload: Vec<u8>) -> Result<()> {
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(async_nats::header::NATS_MESSAGE_ID, id);
    js.publish_with_headers(subject.to_string(), headers, payload.into())
        .await
        .map_err(js_err)?
        .await
        .map_err(js_err)?;
    Ok(())
}

/// Publishes until a server says it stored the message, or `patience` (if given) has passed;
/// the times it tried again. `payload(n)` is the message tried again `n` times (so a result can
/// say it was late). A try whose answer was lost may have been stored: the next carries the
/// same ID, and the stream keeps the first.
pub(crate) async fn publish_stored(
    js: &Context,
    subject: &str,
    id: &str,
    patience: Option<Duration>,
    mut payload: impl FnMut(u32) -> Vec<u8>,
) -> Result<u32> {
    let started = Instant::now();
    let mut again = 0u32;
    loop {
        match publish_once(js, subject, id, payload(again)).await {
            Ok(()) => return Ok(again),
            Err(e) if patience.is_some_and(|p| started.elapsed() >= p) => return Err(e),
            Err(e) => {
                again += 1;
                tracing::warn!("publishing {id} on {subject} (try {again}): {e}");
                tokio::time::sleep(backoff(again)).await;
            }
        }
    }
}

/// The wait after the `tries`-th failure in a row: quick at first (a leader is elected in a
/// second or two), then once a second.
pub(crate) fn backoff(tries: u32) -> Duration {
    Duration::from_millis((125u64 << tries.min(3)).min(1000))
}

/// Whether a JetStream API error says the servers are electing a leader (or not answering),
/// which passes, rather than refusing the request, which does not.
pub(crate) fn passing(e: &context::CreateStreamError) -> bool {
    use context::CreateStreamErrorKind as K;
    match e.kind() {
        K::TimedOut | K::JetStreamUnavailable | K::Response => true,
        K::JetStream(e) => [
            ErrorCode::CLUSTER_NOT_AVAILABLE,
            ErrorCode::CLUSTER_NOT_LEADER,
            ErrorCode::CLUSTER_NOT_ACTIVE,
            ErrorCode::CLUSTER_NOT_ASSIGNED,
        ]
        .contains(&e.error_code()),
        _ => false,
    }
}

/// A durable pull consumer's messages, taken up again whenever their pull breaks.
pub(crate) struct Inputs {
    js: Context,
    stream: String,
    config: pull::Config,
    /// Go on whatever happens to the stream (the controller's own), rather than end when the
    /// run's stream is gone or made anew (a worker's: it joins the run again).
    remake: bool,
    /// When the run's stream was made: another time is another run of the same name. While the
    /// stream is the same, a consumer that is not found (asked while its servers elect its
    /// leader) is made again, never taken for the end of the run.
    stream_created: Option<time::OffsetDateTime>,
    messages: Option<pull::Stream>,
    /// Times the messages were taken up again, since [`Inputs::taken_up`] last said.
    again: u32,
    /// The client's connections so far when [`Inputs::taken_up`] last said: a client whose
    /// server died connects to another, and its pull goes on there without an error, later.
    connects: u64,
}

impl Inputs {
    /// The durable consumer `name` of `subject` on the run's stream, made if it is not there.
    /// `max_ack_pending`: 1 to be handed each message only once the one before is acknowledged
    /// (in order even when a message is lost in flight); 0 for the server's default.
    pub async fn open(
        js: &Context,
        cfg: &ClusterConfig,
        name: &str,
        subject: String,
        max_ack_pending: i64,
        remake: bool,
    ) -> Result<Self> {
        let mut me = Inputs {
            js: js.clone(),
            stream: cfg.stream(),
            config: pull::Config {
                durable_name: Some(name.to_string()),
                filter_subject: subject,
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait: cfg.ack_wait,
                deliver_policy: consumer::DeliverPolicy::All,
                max_ack_pending,
                ..Default::default()
            },
            remake,
            stream_created: None,
            messages: None,
            again: 0,
            connects: 0,
        };
        me.connects = me.connects_so_far();
        let c = me.consumer(true).await?.ok_or_else(|| {
            js_err(format!(
                "{}: the run's stream is gone",
                me.config.filter_subject
            ))
        })?;
        me.messages = Some(pull_from(&c).await?);
        Ok(me)
    }

    /// The subject these are the messages of.
    pub fn subject(&self) -> &str {
        &self.config.filter_subject
    }

    /// Times the messages were taken up again, or the client connected to another server,
    /// since last asked (0: the pull never broke and the server never changed).
    pub fn taken_up(&mut self) -> u32 {
        let now = self.connects_so_far();
        let moved = now.saturating_sub(std::mem::replace(&mut self.connects, now));
        std::mem::take(&mut self.again) + u32::try_from(moved).unwrap_or(u32::MAX)
    }

    fn connects_so_far(&self) -> u64 {
        self.js
            .client()
            .statistics()
            .connects
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The consumer on the run's stream, made if it is missing; `None` if the stream is gone or
    /// another run's (unless this is the controller's, which goes on). `first`: the stream this
    /// opening finds is the run's.
    async fn consumer(&mut self, first: bool) -> Result<Option<PullConsumer>> {
        let name = self.config.durable_name.clone().unwrap_or_default();
        let stream = match self.js.get_stream(&self.stream).await {
            Ok(s) => s,
            Err(e) if !self.remake && stream_gone(&e) => return Ok(None),
            Err(e) => return Err(js_err(e)),
        };
        let created = stream.cached_info().created;
        if first || self.remake {
            self.stream_created = Some(created);
        } else if self.stream_created != Some(created) {
            return Ok(None);
        }
        stream
            .get_or_create_consumer(&name, self.config.clone())
            .await
            .map(Some)
            .map_err(js_err)
    }

    /// The next message; `None` when a worker's consumer is gone or is another run's.
    pub async fn next(&mut self) -> Option<jetstream::Message> {
        let mut tries = 0u32;
        loop {
            if self.messages.is_none() {
                match self.take_up().await {
                    Ok(true) => {}
                    Ok(false) => return None,
                    Err(e) => {
                        tries += 1;
                        tracing::warn!("taking up {} (try {tries}): {e}", self.subject());
                        tokio::time::sleep(backoff(tries)).await;
                        continue;
                    }
                }
            }
            let messages = self.messages.as_mut().expect("taken up");
            match messages.next().await {
                Some(Ok(m)) => return Some(m),
                Some(Err(e)) => {
                    tracing::warn!("{}: {e}: taking it up again", self.subject());
                }
                None => tracing::warn!("{}: the pull ended: taking it up again", self.subject()),
            }
            self.messages = None;
            self.again += 1;
        }
    }

    /// Pulls from the consumer again; false when a worker's run is gone or started anew.
    async fn take_up(&mut self) -> Result<bool> {
        let Some(c) = self.consumer(false).await? else {
            return Ok(false);
        };
        self.messages = Some(pull_from(&c).await?);
        Ok(true)
    }
}

/// A consumer's messages, pulled with a short expiry and heartbeat.
async fn pull_from(c: &PullConsumer) -> Result<pull::Stream> {
    c.stream()
        .expires(PULL_EXPIRES)
        .heartbeat(PULL_HEARTBEAT)
        .messages()
        .await
        .map_err(js_err)
}

/// Whether the run's stream is not there (rather than the API not answering).
fn stream_gone(e: &context::GetStreamError) -> bool {
    matches!(e.kind(), context::GetStreamErrorKind::JetStream(e)
        if e.error_code() == ErrorCode::STREAM_NOT_FOUND)
}
