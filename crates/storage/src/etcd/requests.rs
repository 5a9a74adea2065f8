//! Sending one request to the members until one answers, within bounds.
//!
//! Each attempt goes to one member (see [`Members::pick`]). While it waits, its
//! member is probed every [`CHECK_EVERY`]: the attempt is abandoned, and the request
//! sent to another member, when the member stops answering (frozen: ~0.6 s) or a new
//! leader was elected meanwhile (a proposal forwarded to a frozen leader is lost;
//! etcd would time it out only after 7 s). A request no member processed (no
//! connection, no leader) is sent again after a short pause. Retries stop after
//! [`RETRY_BUDGET`]; one attempt on a member that answers probes may use the whole
//! request deadline (a large range takes its time).
//!
//! A write sent again after an attempt that got no answer may have been applied
//! by that attempt: the answer says so ([`Answer::uncertain`]) and the caller
//! recognises its own write or reports the outcome unknown.

use etcd_client::{GetResponse, ResponseHeader, TxnResponse, WatchStream};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use super::members::{Member, Members, Probe, Tried};
use crate::backoff::Backoff;

/// How long an attempt waits before its member is first probed, and between probes.
const CHECK_EVERY: Duration = Duration::from_millis(200);
/// After this long a failed request is not sent again: no member could serve it
/// (down, or no leader for longer than an election takes).
const RETRY_BUDGET: Duration = Duration::from_secs(3);
/// First pause before sending again a request no member processed (doubling).
const RESEND_DELAY: Duration = Duration::from_millis(20);
const MAX_RESEND_DELAY: Duration = Duration::from_millis(250);

/// Whether a request may be applied twice.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Read,
    Write,
}

/// A successful request.
pub(super) struct Answer<T> {
    pub(super) value: T,
    /// The member that answered.
    pub(super) member: Arc<Member>,
    /// A write that an earlier attempt may have applied already (it got no answer).
    pub(super) uncertain: bool,
}

/// A request that failed.
pub(super) enum Failure {
    /// etcd refused it (or, for lack of a member, it was never processed).
    Etcd(etcd_client::Error),
    /// No member answered in time; nothing was applied.
    Unanswered(String),
    /// A write that got no answer: it may have been applied.
    Uncertain(String),
}

/// Responses that carry etcd's header (revision, raft term).
pub(super) trait Headed {
    fn header(&self) -> Option<&ResponseHeader>;
}

impl Headed for GetResponse {
    fn header(&self) -> Option<&ResponseHeader> {
        GetResponse::header(self)
    }
}

impl Headed for TxnResponse {
    fn header(&self) -> Option<&ResponseHeader> {
        TxnResponse::header(self)
    }
}

impl Headed for etcd_client::CompactionResponse {
    fn header(&self) -> Option<&ResponseHeader> {
        etcd_client::CompactionResponse::header(self)
    }
}

impl Headed for WatchStream {
    fn header(&self) -> Option<&ResponseHeader> {
        None
    }
}

/// How an etcd error bears on sending the request again.
enum Class {
    /// No member processed it: send again; `down` when the member cannot serve.
    NeverSent { down: bool },
    /// It may have been processed (the answer was lost, or etcd gave up waiting).
    MaybeApplied,
    /// etcd's answer: final.
    Final,
}

/// gRPC status codes (fixed by the gRPC spec; tonic is not a dependency here).
mod code {
    pub(super) const CANCELLED: i32 = 1;
    pub(super) const UNKNOWN: i32 = 2;
    pub(super) const DEADLINE_EXCEEDED: i32 = 4;
    pub(super) const RESOURCE_EXHAUSTED: i32 = 8;
    pub(super) const UNAVAILABLE: i32 = 14;
}

fn classify(e: &etcd_client::Error) -> Class {
    let etcd_client::Error::GRpcStatus(status) = e else {
        return match e {
            etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => {
                Class::MaybeApplied
            }
            _ => Class::Final,
        };
    };
    let message = status.message();
    // etcd checks require-leader before it handles a request.
    if message.contains("connect error") || message == "etcdserver: no leader" {
        return Class::NeverSent { down: true };
    }
    match i32::from(status.code()) {
        code::RESOURCE_EXHAUSTED => Class::NeverSent { down: false },
        code::UNAVAILABLE | code::UNKNOWN | code::DEADLINE_EXCEEDED | code::CANCELLED => {
            Class::MaybeApplied
        }
        _ => Class::Final,
    }
}

/// How one attempt on one member ended.
enum Attempt<T> {
    Answered(Result<T, etcd_client::Error>),
    /// Given up waiting: the member stopped answering, lost its leader, or saw a
    /// new one elected; or the request's deadline passed.
    Abandoned(String),
}

/// Wait for `request` on `member`, probing the member while it is slow.
async fn attempt<T>(
    member: &Arc<Member>,
    request: impl Future<Output = Result<T, etcd_client::Error>>,
    deadline: Instant,
) -> Attempt<T> {
    let mut term = member.term();
    let mut request = std::pin::pin!(request);
    let mut check_at = Instant::now() + CHECK_EVERY;
    loop {
        tokio::select! {
            biased;
            answer = &mut request => return Attempt::Answered(answer),
            () = tokio::time::sleep_until(check_at.min(deadline)) => {}
        }
        if Instant::now() >= deadline {
            return Attempt::Abandoned("no answer within the request deadline".into());
        }
        let probe = tokio::select! {
            biased;
            answer = &mut request => return Attempt::Answered(answer),
            probe = member.check() => probe,
        };
        match probe {
            Probe::Down(why) | Probe::Refused(why) => return Attempt::Abandoned(why),
            Probe::Alive(now) if term != 0 && now > term => {
                return Attempt::Abandoned(format!(
                    "a new leader was elected (term {term} to {now}) while {} had the request",
                    member.endpoint
                ));
            }
            Probe::Alive(now) => {
                term = now;
                check_at = Instant::now() + CHECK_EVERY;
            }
        }
    }
}

impl Members {
    /// Send `op` to members until one answers, within `timeout` (see the module doc).
    pub(super) async fn run<T, F, Fut>(
        &self,
        kind: Kind,
        timeout: Duration,
        op: F,
    ) -> Result<Answer<T>, Failure>
    where
        T: Headed,
        F: Fn(&Arc<Member>) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let started = Instant::now();
        let deadline = started + timeout;
        let mut tried = Tried::default();
        let mut uncertain = false;
        let mut backoff = Backoff::new(RESEND_DELAY, MAX_RESEND_DELAY);
        loop {
            let member = self.pick(&mut tried);
            let (why, pause) = match attempt(&member, op(&member), deadline).await {
                Attempt::Answered(Ok(value)) => {
                    member.answered(value.header());
                    self.saw(value.header());
                    return Ok(Answer {
                        value,
                        member,
                        uncertain,
                    });
                }
                Attempt::Answered(Err(e)) => match classify(&e) {
                    Class::Final => return Err(Failure::Etcd(e)),
                    Class::NeverSent { down } => {
                        if down {
                            member.mark_down(&e.to_string());
                        }
                        (e.to_string(), backoff.next_delay())
                    }
                    Class::MaybeApplied => {
                        uncertain |= kind == Kind::Write;
                        (e.to_string(), backoff.next_delay())
                    }
                },
                Attempt::Abandoned(why) => {
                    uncertain |= kind == Kind::Write;
                    (why, Duration::ZERO)
                }
            };
            let resend_at = Instant::now() + pause;
            if resend_at >= deadline || resend_at - started >= RETRY_BUDGET {
                let why = format!("{why} (at {})", member.endpoint);
                return Err(match uncertain {
                    true => Failure::Uncertain(why),
                    false => Failure::Unanswered(why),
                });
            }
            tokio::time::sleep_until(resend_at).await;
        }
    }
}
