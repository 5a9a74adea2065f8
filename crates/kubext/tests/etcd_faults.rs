//! kubext on etcd that fails under it (issue 10): etcd killed and restarted, a
//! cluster member lost, quorum lost. kubext must report itself not ready while its
//! watch cache cannot follow etcd, recover on its own once etcd is back, and lose no
//! acknowledged write. Issue 34's fault bound: while a member is frozen, requests
//! stay fast (follower: p99 < 1 s; any member: none over 5 s). Each test starts
//! its own etcd (or cluster) and kubext.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::*;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::{Etcd, EtcdCluster, Server, Storage};

/// Concurrent creators in each test.
const WRITERS: usize = 4;

/// `/readyz`'s status code (0 if no answer within 5 s).
async fn readyz(client: &kube::Client) -> u16 {
    let req = http::Request::get("/readyz")
        .body(kube::client::Body::empty())
        .unwrap();
    match tokio::time::timeout(Duration::from_secs(5), client.send(req)).await {
        Ok(Ok(resp)) => resp.status().as_u16(),
        _ => 0,
    }
}

/// Wait until `/readyz` answers `code`; how long that took.
async fn until_readyz(client: &kube::Client, code: u16, limit: Duration) -> Duration {
    let started = Instant::now();
    while readyz(client).await != code {
        assert!(
            started.elapsed() < limit,
            "/readyz not {code} within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    started.elapsed()
}

/// Writers creating ConfigMaps in a loop, remembering every acknowledged name.
/// Failures (etcd down) are remembered and retried.
struct Load {
    acked: Arc<Mutex<BTreeSet<String>>>,
    failed: Arc<Mutex<Vec<String>>>,
    /// Every create's latency.
    latencies: Latencies,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(client: &kube::Client, writers: usize) -> Load {
        let load = Load {
            acked: Default::default(),
            failed: Default::default(),
            latencies: Default::default(),
            stop: Default::default(),
            tasks: Vec::new(),
        };
        let tasks = (0..writers)
            .map(|w| {
                let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
                let (acked, failed, stop) =
                    (load.acked.clone(), load.failed.clone(), load.stop.clone());
                let latencies = load.latencies.clone();
                tokio::spawn(async move {
                    for i in 0.. {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let name = format!("w{w}-{i}");
                        let (params, object) = (PostParams::default(), cm(&name));
                        match latencies.time("create", api.create(&params, &object)).await {
                            Ok(_) => {
                                acked.lock().unwrap().insert(name);
                            }
                            Err(e) => {
                                failed.lock().unwrap().push(e.to_string());
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        }
                    }
                })
            })
            .collect();
        Load { tasks, ..load }
    }

    fn failed(&self) -> usize {
        self.failed.lock().unwrap().len()
    }

    /// The errors after the first `skip`.
    fn errors_since(&self, skip: usize) -> Vec<String> {
        self.failed.lock().unwrap()[skip..].to_vec()
    }

    fn acked(&self) -> usize {
        self.acked.lock().unwrap().len()
    }

    /// Wait until `more` further creates were acknowledged; how long that took.
    async fn progress(&self, more: usize, limit: Duration) -> Duration {
        let started = Instant::now();
        let target = self.acked() + more;
        while self.acked() < target {
            assert!(
                started.elapsed() < limit,
                "writes did not progress within {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        started.elapsed()
    }

    async fn stop(self) -> BTreeSet<String> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            t.await.unwrap();
        }
        self.acked.lock().unwrap().clone()
    }
}

/// Every acknowledged create is listed (a consistent list), and the list works.
async fn assert_all_listed(client: &kube::Client, acked: &BTreeSet<String>) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let present: BTreeSet<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let lost: Vec<_> = acked.difference(&present).take(5).collect();
    assert!(
        lost.is_empty(),
        "acknowledged creates lost, e.g. {lost:?} ({} acked)",
        acked.len()
    );
}

/// A new watch sees a create made after it started.
async fn assert_watch_works(client: &kube::Client, name: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = api
        .list(&ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let stream = api.watch(&WatchParams::default(), &rv).await.unwrap();
    api.create(&PostParams::default(), &cm(name)).await.unwrap();
    assert!(sees(stream, name).await, "new watch missed {name}");
}

/// Whether `stream` delivers an ADDED for `name` within 10 s (false if it ends).
async fn sees(
    stream: impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>>,
    name: &str,
) -> bool {
    let mut stream = std::pin::pin!(stream);
    let found = async {
        while let Ok(Some(event)) = stream.try_next().await {
            if let WatchEvent::Added(c) = event
                && c.metadata.name.as_deref() == Some(name)
            {
                return true;
            }
        }
        false
    };
    tokio::time::timeout(Duration::from_secs(10), found)
        .await
        .unwrap_or(false)
}

/// A create, and whether it failed with 503 (or 504), and how long it took.
async fn create_outcome(client: &kube::Client, name: &str) -> (Option<u16>, Duration) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let started = Instant::now();
    let code = match api.create(&PostParams::default(), &cm(name)).await {
        Ok(_) => None,
        Err(e) => Some(api_error(e).code),
    };
    (code, started.elapsed())
}

/// Issue 10: kill -9 the only etcd under load and restart it. kubext goes not
/// ready, comes back by itself, and every acknowledged create is there; a watch
/// that was open across the outage resumes, and new watches work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_restart_under_load_recovers() {
    let mut etcd = Etcd::start().unwrap();
    let server = Server::builder()
        .storage(Storage::Etcd(etcd.endpoint()))
        .start()
        .unwrap();
    let client = server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let across = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let load = Load::start(&client, WRITERS);
    load.progress(100, Duration::from_secs(20)).await;

    etcd.kill9();
    let down = until_readyz(&client, 500, Duration::from_secs(10)).await;
    let why = client
        .request_text(http::Request::get("/readyz").body(vec![]).unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        why.contains("[-]etcd failed: reason withheld\n") && why.contains("readyz check failed"),
        "{why}"
    );
    let list = tokio::time::timeout(
        Duration::from_secs(40),
        api.list(&ListParams::default().limit(1)),
    )
    .await
    .expect("a list while etcd is down answers");
    let code = api_error(list.unwrap_err()).code;
    assert!(matches!(code, 503 | 504), "list while etcd is down: {code}");

    let restarting = Instant::now();
    tokio::task::block_in_place(|| etcd.restart()).unwrap();
    let etcd_up = restarting.elapsed();
    let up = until_readyz(&client, 200, Duration::from_secs(15)).await;
    let writes = load.progress(50, Duration::from_secs(15)).await;
    let (failed, acked) = (load.failed(), load.acked());
    let acked_set = load.stop().await;
    eprintln!(
        "readyz 500 {down:?} after kill; etcd restarted in {etcd_up:?}, readyz 200 {up:?} \
         later; writes resumed in {writes:?}; {acked} creates acked, {failed} failed"
    );

    assert_all_listed(&client, &acked_set).await;
    api.create(&PostParams::default(), &cm("after-restart"))
        .await
        .unwrap();
    assert!(
        sees(across, "after-restart").await,
        "the watch open across the restart did not resume"
    );
    assert_watch_works(&client, "new-watch").await;
}

/// Issue 10 on a 3-member cluster: losing the member that carries kubext's watch
/// costs nothing visible; losing quorum makes writes fail with 503 in bounded time
/// and readyz 500; restarting the members brings everything back, no acknowledged
/// create lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_member_and_quorum_loss_recover() {
    let mut cluster = EtcdCluster::start(3).unwrap();
    let server = Server::builder()
        .storage(Storage::Etcd(cluster.endpoints()))
        .start()
        .unwrap();
    let client = server.client().await.unwrap();
    let load = Load::start(&client, WRITERS);
    load.progress(100, Duration::from_secs(20)).await;

    // The member serving kubext's watch (etcd's own metric says which).
    let first = (0..3)
        .find(|&i| cluster.members[i].watcher_count() > 0)
        .expect("some member serves kubext's watch");
    let failed_before = load.failed();
    cluster.members[first].kill9();
    let survived = load.progress(100, Duration::from_secs(15)).await;
    // Creates in flight on the killed member's connection, or during a leader
    // election when it led, may fail; none may fail for trying the dead member.
    let errors = load.errors_since(failed_before);
    let failed_one_down = errors.len();
    let misrouted: Vec<_> = errors
        .iter()
        .filter(|e| e.contains("connect error"))
        .collect();
    assert!(
        misrouted.is_empty(),
        "creates sent to the dead member: {misrouted:?}"
    );
    until_readyz(&client, 200, Duration::from_secs(10)).await;
    let moved = Instant::now();
    while !cluster.members.iter().any(|m| m.watcher_count() > 0) {
        assert!(
            moved.elapsed() < Duration::from_secs(10),
            "watch not re-established"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_watch_works(&client, "one-member-down").await;

    let second = (0..3).find(|&i| i != first).expect("another member");
    cluster.members[second].kill9();
    let not_ready = until_readyz(&client, 500, Duration::from_secs(15)).await;
    let (code, took) = create_outcome(&client, "no-quorum").await;
    assert!(
        matches!(code, Some(503 | 504)),
        "create without quorum: {code:?} after {took:?}"
    );
    assert!(
        took < Duration::from_secs(35),
        "create without quorum took {took:?}"
    );

    tokio::task::block_in_place(|| cluster.members[second].restart()).unwrap();
    let ready = until_readyz(&client, 200, Duration::from_secs(20)).await;
    tokio::task::block_in_place(|| cluster.members[first].restart()).unwrap();
    let writes = load.progress(50, Duration::from_secs(15)).await;
    let (failed, acked) = (load.failed(), load.acked());
    let acked_set = load.stop().await;
    eprintln!(
        "one member down: 100 more writes in {survived:?} ({failed_one_down} failed); quorum lost: readyz 500 after \
         {not_ready:?}, create failed with {code:?} in {took:?}; readyz 200 {ready:?} after \
         quorum was back; writes resumed in {writes:?}; {acked} creates acked, {failed} failed"
    );
    assert_all_listed(&client, &acked_set).await;
    assert_watch_works(&client, "all-members-back").await;
}

/// One request through kubext.
#[derive(Clone, Copy)]
struct Sample {
    what: &'static str,
    started: Instant,
    took: Duration,
    failed: bool,
}

/// Latencies of requests, shared by the tasks that make them.
#[derive(Clone, Default)]
struct Latencies(Arc<Mutex<Vec<Sample>>>);

impl Latencies {
    /// Run `request`, recording how long it took.
    async fn time<T, E>(
        &self,
        what: &'static str,
        request: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        let started = Instant::now();
        let result = request.await;
        let sample = Sample {
            what,
            started,
            took: started.elapsed(),
            failed: result.is_err(),
        };
        self.0.lock().unwrap().push(sample);
        result
    }

    /// The requests in flight at some time in `[from, to)`.
    fn overlapping(&self, from: Instant, to: Instant) -> Vec<Sample> {
        let samples = self.0.lock().unwrap();
        samples
            .iter()
            .filter(|s| s.started < to && s.started + s.took >= from)
            .copied()
            .collect()
    }
}

/// How long some requests took.
struct Summary {
    count: usize,
    failed: usize,
    p50: Duration,
    p99: Duration,
    max: Duration,
    /// The slowest few: what, and how long.
    slowest: Vec<(&'static str, Duration)>,
}

impl Summary {
    fn of(samples: &[Sample]) -> Summary {
        let mut took: Vec<Duration> = samples.iter().map(|s| s.took).collect();
        took.sort();
        let at = |q: f64| {
            let i = ((took.len() as f64 * q).ceil() as usize).saturating_sub(1);
            took.get(i).copied().unwrap_or_default()
        };
        let mut slowest: Vec<(&'static str, Duration)> =
            samples.iter().map(|s| (s.what, s.took)).collect();
        slowest.sort_by_key(|&(_, took)| std::cmp::Reverse(took));
        slowest.truncate(5);
        Summary {
            count: took.len(),
            failed: samples.iter().filter(|s| s.failed).count(),
            p50: at(0.50),
            p99: at(0.99),
            max: took.last().copied().unwrap_or_default(),
            slowest,
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} requests ({} failed): p50 {:?}, p99 {:?}, max {:?} (slowest {:?})",
            self.count, self.failed, self.p50, self.p99, self.max, self.slowest
        )
    }
}

/// A reader alternating a consistent GET of `name` and a consistent LIST (one
/// page of 100), timing each.
fn start_reader(
    client: &kube::Client,
    name: &str,
    latencies: &Latencies,
    stop: &Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let (name, latencies, stop) = (name.to_owned(), latencies.clone(), stop.clone());
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            let _ = latencies.time("get", api.get(&name)).await;
            let page = ListParams::default().limit(100);
            let _ = latencies.time("list", api.list(&page)).await;
        }
    })
}

/// A watch through kubext that remembers the name of every ConfigMap it saw added.
struct Watched {
    names: Arc<Mutex<BTreeSet<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Watched {
    async fn start(api: &Api<ConfigMap>) -> Watched {
        let rv = listed_resource_version(api).await;
        let stream = api.watch(&WatchParams::default(), &rv).await.unwrap();
        let names: Arc<Mutex<BTreeSet<String>>> = Default::default();
        let seen = names.clone();
        let task = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.try_next().await.unwrap() {
                if let WatchEvent::Added(c) = event {
                    seen.lock().unwrap().extend(c.metadata.name);
                }
            }
        });
        Watched { names, task }
    }

    /// Wait until the watch has seen every name in `names`; how long that took.
    async fn until_seen(&self, names: &BTreeSet<String>, limit: Duration) -> Duration {
        let started = Instant::now();
        loop {
            let missing: Vec<String> = names
                .difference(&self.names.lock().unwrap())
                .take(5)
                .cloned()
                .collect();
            if missing.is_empty() {
                return started.elapsed();
            }
            assert!(!self.task.is_finished(), "the watch ended");
            assert!(
                started.elapsed() < limit,
                "the watch missed {missing:?} (waited {limit:?})"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// An etcd member's answer to a POST of `body` to `path` (its JSON gateway).
fn etcd_post(member: &testkit::Etcd, path: &str, body: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", member.client_port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let request = format!(
        "POST {path} HTTP/1.0\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let json = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// A member's id and the id of the leader it follows (as the gateway spells them).
fn member_status(member: &testkit::Etcd) -> (String, String) {
    let status = etcd_post(member, "/v3/maintenance/status", "{}");
    let id = status["header"]["member_id"].as_str().unwrap_or_default();
    (
        id.to_owned(),
        status["leader"].as_str().unwrap_or_default().to_owned(),
    )
}

/// The leader's index in `cluster`, once there is one.
fn leader(cluster: &EtcdCluster) -> Option<usize> {
    let statuses: Vec<(String, String)> = cluster.members.iter().map(member_status).collect();
    let (_, leader) = &statuses[0];
    statuses.iter().position(|(id, _)| id == leader)
}

/// Which etcd member a test freezes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Frozen {
    /// The member serving kubext's watch, not the leader.
    WatchFollower,
    /// A member that neither leads nor serves kubext's watch.
    IdleFollower,
    /// The leader (whether or not it serves the watch).
    Leader,
}

/// The member to freeze. kubext's watch may be on the leader: a watch-follower
/// test then hands leadership to another member first.
async fn pick(cluster: &EtcdCluster, which: Frozen) -> usize {
    let started = Instant::now();
    loop {
        let leader = leader(cluster);
        let watch = (0..3).find(|&i| cluster.members[i].watcher_count() > 0);
        match (which, leader, watch) {
            (Frozen::Leader, Some(l), _) => return l,
            (Frozen::WatchFollower, Some(l), Some(w)) if w != l => return w,
            (Frozen::IdleFollower, Some(l), Some(w)) => {
                if let Some(i) = (0..3).find(|&i| i != l && i != w) {
                    return i;
                }
            }
            (Frozen::WatchFollower, Some(l), Some(_)) => {
                let other = (0..3).find(|&i| i != l).unwrap();
                let (target, _) = member_status(&cluster.members[other]);
                let body = format!(r#"{{"targetID":"{target}"}}"#);
                etcd_post(
                    &cluster.members[l],
                    "/v3/maintenance/transfer-leadership",
                    &body,
                );
            }
            _ => {}
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no member to freeze as {which:?} (leader {leader:?}, watch on {watch:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Issue 34's fault bound: freeze (SIGSTOP) one member of a 3-member cluster for
/// `hold` under steady load (creates, and a reader doing GET and LIST) and a watch
/// through kubext. Every request in flight during the freeze is timed; writes must
/// go on, a watch opened before the freeze sees every acknowledged create, and every
/// acknowledged create is listed afterwards. Returns the latencies during the freeze.
async fn freeze_under_load(which: Frozen, hold: Duration) -> Summary {
    let cluster = EtcdCluster::start(3).unwrap();
    let server = Server::builder()
        .storage(Storage::Etcd(cluster.endpoints()))
        .start()
        .unwrap();
    let client = server.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("read-me"))
        .await
        .unwrap();
    let watched = Watched::start(&api).await;
    let load = Load::start(&client, WRITERS);
    let reader = start_reader(&client, "read-me", &load.latencies, &load.stop);
    load.progress(50, Duration::from_secs(20)).await;

    let member = pick(&cluster, which).await;
    cluster.members[member].freeze(true);
    let frozen_at = Instant::now();
    let writes = load.progress(50, Duration::from_secs(10)).await;
    let marker = BTreeSet::from(["during-freeze".to_string()]);
    api.create(&PostParams::default(), &cm("during-freeze"))
        .await
        .unwrap();
    let seen = watched.until_seen(&marker, Duration::from_secs(10)).await;
    tokio::time::sleep(hold.saturating_sub(frozen_at.elapsed())).await;
    let thawed_at = Instant::now();
    cluster.members[member].freeze(false);

    let latencies = load.latencies.clone();
    let (acked, failed) = (load.acked(), load.errors_since(0));
    let acked_set = load.stop().await;
    reader.await.unwrap();
    let during = Summary::of(&latencies.overlapping(frozen_at, thawed_at));
    eprintln!(
        "{which:?} (member {member}) frozen {:?}: {during}; 50 creates in {writes:?}, a \
         create seen by the watch {seen:?} after it was acknowledged; {acked} creates acked, \
         {} failed: {:?}",
        thawed_at - frozen_at,
        failed.len(),
        failed.iter().take(3).collect::<Vec<_>>()
    );
    assert_all_listed(&client, &acked_set).await;
    watched
        .until_seen(&acked_set, Duration::from_secs(10))
        .await;
    assert_watch_works(&client, "after-thaw").await;
    during
}

/// The bound for a frozen follower: p99 under 1 s, nothing over 5 s.
fn assert_follower_bound(during: &Summary) {
    assert!(
        during.p99 < Duration::from_secs(1) && during.max < Duration::from_secs(5),
        "{during}"
    );
}

/// A member that freezes (SIGSTOP: its connections stay open, nothing answers)
/// while carrying kubext's watch. A request routed to it is abandoned when its
/// member fails a probe (~0.6 s) and sent to another; the watch gets no answer to
/// a progress request and resumes on another member after the cache's revision.
/// Before, etcd-client's balancer kept routing to the member and each request
/// waited for its deadline: 10–18 requests in 8 s, up to 15 s each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_frozen_watch_member_recovers() {
    let during = freeze_under_load(Frozen::WatchFollower, Duration::from_secs(8)).await;
    assert_follower_bound(&during);
}

/// A frozen follower that serves no watch: only its share of requests is affected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_frozen_follower_bounded() {
    let during = freeze_under_load(Frozen::IdleFollower, Duration::from_secs(8)).await;
    assert_follower_bound(&during);
}

/// A frozen leader: writes and consistent reads wait until the others elect a new
/// one (1–2 s after the freeze with etcd's default 1 s election timeout, longer
/// after a split vote), so only the issue's hard bound holds: no request over 5 s.
/// (p99 stays under 1 s when the load makes enough requests for the few that
/// waited to be under 1 %; measured 0.05 s, but up to 2 s on a busy machine.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_cluster_frozen_leader_bounded() {
    let during = freeze_under_load(Frozen::Leader, Duration::from_secs(8)).await;
    assert!(during.max < Duration::from_secs(5), "{during}");
}
