//! wardle-apiserver and kubext as real processes: the extension server registered
//! through a Service, an EndpointSlice and an APIService with a caBundle, then used
//! through kubext with kubectl and kube-rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, WatchEvent, WatchParams};
use testkit::Server;

/// A running wardle-apiserver, killed when dropped.
struct Wardle {
    child: Child,
    addr: SocketAddr,
    data_dir: tempfile::TempDir,
    log: PathBuf,
}

impl Wardle {
    fn start(main_kubeconfig: &Path) -> Wardle {
        let data_dir = tempfile::tempdir().unwrap();
        let log = data_dir.path().join("wardle.log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_wardle-apiserver"))
            .arg("--kubeconfig")
            .arg(main_kubeconfig)
            .args(["--secure-port", "0", "--storage", "memory", "--data-dir"])
            .arg(data_dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (_, addr) = testkit::read_ready_lines(stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", std::fs::read_to_string(&log).unwrap_or_default())
        });
        Wardle {
            child,
            addr,
            data_dir,
            log,
        }
    }
}

impl Drop for Wardle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- wardle log ---\n{}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
        }
    }
}

/// Namespace `wardle`, then a Service, an EndpointSlice and an APIService with
/// wardle-apiserver's CA as the caBundle.
fn registration(wardle: &Wardle) -> String {
    let ca = std::fs::read(wardle.data_dir.path().join("pki/ca.crt")).unwrap();
    let namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: wardle}\n---";
    let apiservice = testkit::extension_registration(
        "wardle",
        "api",
        "wardle.example.com",
        "v1alpha1",
        wardle.addr.port(),
        testkit::BackendTls::CaBundle(&ca),
    );
    format!("{namespace}{apiservice}")
}

fn flunders(client: kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("wardle.example.com", "v1alpha1", "Flunder"),
        "flunders",
    );
    Api::namespaced_with(client, "default", &resource)
}

fn kubectl_err(server: &Server, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(!out.status.success(), "kubectl {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn wardle_serves_through_kubext() {
    let kubext = Server::builder()
        .log_filter("info,kubext_server::chain=debug")
        .start()
        .unwrap();
    let mut wardle = Wardle::start(&kubext.kubeconfig);
    kubext.apply(&registration(&wardle));
    kubext.kubectl_ok(&[
        "wait",
        "--for=condition=Available",
        "apiservice/v1alpha1.wardle.example.com",
        "--timeout=30s",
    ]);

    // Discovery and OpenAPI through the aggregator.
    let resources = kubext.kubectl_ok(&["api-resources", "--api-group=wardle.example.com"]);
    assert!(
        resources.contains("flunders") && resources.contains("fischers"),
        "{resources}"
    );
    let explained = kubext.kubectl_ok(&["explain", "flunders.spec.reference"]);
    assert!(
        explained.contains("The name of the Flunder or Fischer this Flunder refers to."),
        "{explained}"
    );

    // CRUD with kubectl, printer columns included.
    kubext.apply(
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: one, namespace: default}\nspec: {reference: two, referenceType: Flunder}\n",
    );
    let table = kubext.kubectl_ok(&["get", "flunders"]);
    assert!(
        table.contains("REFERENCE")
            && table
                .lines()
                .any(|l| l.starts_with("one") && l.contains("two")),
        "{table}"
    );

    // Watch with kube-rs: the event arrives through the proxy.
    let api = flunders(kubext.client().await.unwrap());
    let listed = api.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    let mut events = api
        .watch(
            &WatchParams::default().timeout(30),
            &listed.metadata.resource_version.unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    kubext.apply(
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: three, namespace: default}\nspec: {reference: one}\n",
    );
    let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .expect("the watch event arrives")
        .unwrap();
    assert!(
        matches!(&event, Some(WatchEvent::Added(o)) if o.metadata.name.as_deref() == Some("three")),
        "{event:?}"
    );

    // Validation from the schema, with the field path.
    let out = kubext.kubectl_with_stdin(
        &["create", "--validate=false", "-f", "-"],
        Some("apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: bad, namespace: default}\nspec: {referenceType: Bogus}\n"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"spec.referenceType: Unsupported value: "Bogus""#),
        "{err}"
    );

    // Admission (BanFlunder): a Fischer keeps a name away from Flunders.
    kubext.apply(
        "apiVersion: wardle.example.com/v1alpha1\nkind: Fischer\nmetadata: {name: strict}\ndisallowedFlunders: [banned]\n",
    );
    let out = kubext.kubectl_with_stdin(
        &["create", "-f", "-"],
        Some("apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: banned, namespace: default}\nspec: {reference: one}\n"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"flunders.wardle.example.com "banned" is forbidden: this name may not be used, please change the resource name"#),
        "{err}"
    );

    // Authorization is delegated to kubext's RBAC: straight to wardle, as alice
    // (impersonated by wardle's own admin), listing flunders is denied until
    // kubext grants it.
    let wardle_kubectl = |args: &[&str]| {
        std::process::Command::new(std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into()))
            .arg("--kubeconfig")
            .arg(wardle.data_dir.path().join("admin.kubeconfig"))
            .args(args)
            .output()
            .unwrap()
    };
    let as_alice = [
        "get", "flunders", "-n", "default", "--as", "alice", "-o", "name",
    ];
    let denied = wardle_kubectl(&as_alice);
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains(
            r#"flunders.wardle.example.com is forbidden: User "alice" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "default""#
        ),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );
    kubext.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: flunder-reader}\nrules:\n- {apiGroups: [wardle.example.com], resources: [flunders], verbs: [get, list]}\n",
    );
    kubext.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "alice-flunders",
        "--clusterrole=flunder-reader",
        "--user=alice",
    ]);
    // Decisions are cached for 10 s on wardle, so the denial above may be
    // answered again for a while.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let out = wardle_kubectl(&as_alice);
        if out.status.success() {
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("/one"),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "alice is still denied: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        kubext
            .log()
            .contains("verb=create path=/apis/authorization.k8s.io/v1/subjectaccessreviews"),
        "no SubjectAccessReview reached kubext"
    );

    kubext.kubectl_ok(&["delete", "flunder", "one"]);
    assert!(api.get_opt("one").await.unwrap().is_none());

    // Deleting a namespace deletes its flunders on the extension server too.
    kubext.kubectl_ok(&["create", "namespace", "team"]);
    kubext.apply(
        "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata: {name: member, namespace: team}\nspec: {reference: one}\n",
    );
    kubext.kubectl_ok(&["delete", "namespace", "team", "--timeout=30s"]);
    let direct =
        std::process::Command::new(std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into()))
            .arg("--kubeconfig")
            .arg(wardle.data_dir.path().join("admin.kubeconfig"))
            .args(["get", "flunders", "-n", "team", "-o", "name"])
            .output()
            .unwrap();
    assert!(
        direct.status.success(),
        "{}",
        String::from_utf8_lossy(&direct.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&direct.stdout).trim(),
        "",
        "left on the extension server"
    );

    // The extension server stops: its group-version is unavailable (503), and the
    // rest of the API is not affected.
    let _ = wardle.child.kill();
    let _ = wardle.child.wait();
    kubext.kubectl_ok(&[
        "wait",
        "--for=condition=Available=False",
        "apiservice/v1alpha1.wardle.example.com",
        "--timeout=30s",
    ]);
    let err = kubectl_err(
        &kubext,
        &[
            "get",
            "--raw",
            "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
        ],
    );
    assert!(err.contains("ServiceUnavailable"), "{err}");
    kubext.kubectl_ok(&["get", "configmaps", "-A"]);
    kubext.kubectl_ok(&["api-resources"]);
}

/// A client straight to wardle, with nothing but `token` (wardle's CA from its
/// admin kubeconfig).
async fn direct_with_token(wardle: &Wardle, token: &str) -> Api<DynamicObject> {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(wardle.data_dir.path().join("admin.kubeconfig"))
            .unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.to_string().into()),
        ..Default::default()
    };
    config.default_retry = false;
    flunders(kube::Client::try_from(config).unwrap())
}

fn api_status(error: kube::Error) -> kube::core::Status {
    match error {
        kube::Error::Api(status) => *status,
        other => panic!("not an API error: {other:?}"),
    }
}

/// As upstream's sample-apiserver does (go/sampleapiserver checks it with the
/// same expectations): a bearer token sent straight to wardle is reviewed by
/// kubext (TokenReview); the user it names is then authorized by kubext's RBAC,
/// a token nobody issued is 401, and a deleted account's token stops working
/// once the cached review expires.
#[tokio::test]
async fn a_bearer_token_sent_straight_to_wardle_is_reviewed_by_kubext() {
    let kubext = Server::builder()
        .log_filter("info,kubext_server::chain=debug")
        .start()
        .unwrap();
    let wardle = Wardle::start(&kubext.kubeconfig);
    kubext.kubectl_ok(&["create", "serviceaccount", "flunder-reader"]);
    kubext.apply(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: flunder-reader}\nrules:\n- {apiGroups: [wardle.example.com], resources: [flunders], verbs: [get, list, watch]}\n",
    );
    kubext.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "flunder-reader",
        "--clusterrole=flunder-reader",
        "--serviceaccount=default:flunder-reader",
    ]);
    let token = kubext.kubectl_ok(&["create", "token", "flunder-reader"]);
    let reader = direct_with_token(&wardle, token.trim()).await;
    let listed = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match reader.list(&Default::default()).await {
                Ok(list) => break list,
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    })
    .await
    .expect("the reader's token lists flunders");
    assert!(listed.items.is_empty());
    assert!(
        kubext
            .log()
            .contains("verb=create path=/apis/authentication.k8s.io/v1/tokenreviews"),
        "no TokenReview reached kubext"
    );

    let flunder: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "by-token"},
    }))
    .unwrap();
    let refused = api_status(
        reader
            .create(&Default::default(), &flunder)
            .await
            .unwrap_err(),
    );
    assert_eq!((refused.code, refused.reason.as_str()), (403, "Forbidden"));
    assert!(
        refused.message.contains(r#"flunders.wardle.example.com is forbidden: User "system:serviceaccount:default:flunder-reader" cannot create resource "flunders" in API group "wardle.example.com" in the namespace "default""#),
        "{}",
        refused.message
    );

    let stranger = direct_with_token(&wardle, "not-a-token").await;
    let refused = api_status(stranger.list(&Default::default()).await.unwrap_err());
    assert_eq!(
        (
            refused.code,
            refused.reason.as_str(),
            refused.message.as_str()
        ),
        (401, "Unauthorized", "Unauthorized")
    );

    // The account's token dies with it, once the cached review expires.
    kubext.kubectl_ok(&["delete", "serviceaccount", "flunder-reader"]);
    let deleted = std::time::Instant::now();
    let refused = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match reader.list(&Default::default()).await {
                Ok(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                Err(e) => break api_status(e),
            }
        }
    })
    .await
    .expect("the deleted account's token still works after 30 s");
    assert_eq!(
        (refused.code, refused.reason.as_str()),
        (401, "Unauthorized")
    );
    println!(
        "the deleted account's token refused {:?} after the deletion",
        deleted.elapsed()
    );
}
