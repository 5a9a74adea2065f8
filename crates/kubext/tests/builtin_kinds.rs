//! Every built-in kind of a default kube-apiserver 1.33, stored as it stores
//! them: discovery against upstream's own discovery documents, objects created
//! from typical manifests read back with upstream's defaults (expected values
//! from upstream's `defaults_test.go` files and registry strategies), printer
//! columns, status and scale subresources, through kubectl and kube-rs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use serde_json::{Value, json};
use testkit::Server;

fn server() -> Server {
    Server::builder().start().expect("kubext starts")
}

fn get_json(s: &Server, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&s.kubectl_ok(&all)).unwrap()
}

/// Upstream's discovery of a default 1.37 server, as data
/// (`docs/research/builtin-kinds/default-resources-1.37.tsv`, written by
/// `from-discovery.py` from kube-apiserver 1.37.2 with default flags).
fn upstream_resources() -> Vec<Vec<String>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/research/builtin-kinds/default-resources-1.37.tsv"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

#[test]
fn discovery_lists_every_resource_of_a_default_1_37_server() {
    let s = server();
    let mut missing = Vec::new();
    let mut documents: std::collections::HashMap<String, Value> = Default::default();
    for row in upstream_resources() {
        let [
            group,
            version,
            resource,
            _singular,
            kind,
            scope,
            short,
            categories,
            verbs,
            _subresources,
            hash,
            ..,
        ] = row.as_slice()
        else {
            panic!("bad row {row:?}")
        };
        let id = format!("{group}/{version}/{resource}");
        let path = if group == "core" {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        // A group-version kubext does not serve answers 404: no document.
        let doc = documents.entry(path.clone()).or_insert_with(|| {
            serde_json::from_slice(&s.kubectl(&["get", "--raw", &path]).stdout).unwrap_or(json!({}))
        });
        let found = doc["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["name"] == resource.as_str());
        let Some(found) = found else {
            missing.push(id);
            continue;
        };
        assert_eq!(found["kind"], kind.as_str(), "{id}");
        assert_eq!(found["namespaced"], scope == "ns", "{id}");
        let shorts: BTreeSet<&str> = found["shortNames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let want: BTreeSet<&str> = short.split(',').filter(|s| !s.is_empty()).collect();
        assert_eq!(shorts, want, "{id} shortNames");
        let listed = |key: &str| -> BTreeSet<String> {
            found[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        };
        let want: BTreeSet<String> = categories
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        assert_eq!(listed("categories"), want, "{id} categories");
        // Upstream hashes the storage version; types never stored have none.
        assert_eq!(
            found["storageVersionHash"].as_str().unwrap_or(""),
            hash.as_str(),
            "{id} storageVersionHash"
        );
        if verbs == "all 8" {
            assert_eq!(
                found["verbs"].as_array().map(Vec::len),
                Some(8),
                "{id} verbs: {found}"
            );
        }
    }
    assert!(missing.is_empty(), "resources not discovered: {missing:?}");
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx
        ports: [{containerPort: 80}]
        readinessProbe: {httpGet: {port: 80}}
"#;

#[test]
fn a_deployment_is_stored_with_upstream_defaults_and_prints_its_columns() {
    let s = server();
    s.apply(DEPLOYMENT);
    let d = get_json(&s, &["deployment", "web"]);
    // pkg/apis/apps/v1 TestSetDefaultDeployment.
    assert_eq!(d["spec"]["replicas"], 1, "{d}");
    assert_eq!(
        d["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
    assert_eq!(d["metadata"]["generation"], 1);
    assert_eq!(d["status"], json!({}), "the status is the controller's");
    // pkg/apis/core/v1 TestWorkloadDefaults (pod template).
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["restartPolicy"], "Always");
    assert_eq!(pod["schedulerName"], "default-scheduler");
    assert_eq!(pod["securityContext"], json!({}));
    assert_eq!(pod["terminationGracePeriodSeconds"], 30);
    let c = &pod["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always", "no tag means latest");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    assert_eq!(
        c["readinessProbe"],
        json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
               "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert!(
        pod.get("enableServiceLinks").is_none(),
        "a Pod-only default: {pod}"
    );

    // printDeployment's columns.
    let table = s.kubectl_ok(&["get", "deployments"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["web", "0/1", "0", "0"], "{table}");
    let wide = s.kubectl_ok(&["get", "deployments", "-o", "wide"]);
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(&header[5..], ["CONTAINERS", "IMAGES", "SELECTOR"]);
    assert!(wide.contains("nginx") && wide.contains("app=web"), "{wide}");

    // The scale subresource: kubectl scale, and Scale's selector as text.
    s.kubectl_ok(&["scale", "deployment/web", "--replicas=3"]);
    let d = get_json(&s, &["deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(
        d["metadata"]["generation"], 2,
        "a spec change bumps generation"
    );
    let scale: Value = serde_json::from_str(&s.kubectl_ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/default/deployments/web/scale",
    ]))
    .unwrap();
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["selector"], "app=web");

    // Status is written through /status only; a main-resource write keeps it.
    let status = json!({"status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
    s.kubectl_ok(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"status":{"readyReplicas":0},"metadata":{"labels":{"tier":"front"}}}"#,
    ]);
    let d = get_json(&s, &["deployment", "web"]);
    assert_eq!(d["status"]["readyReplicas"], 2, "{d}");
    assert_eq!(
        d["metadata"]["generation"], 2,
        "labels and status are not spec"
    );
    // Deployment's PrepareForUpdate: annotations are copied to ReplicaSets,
    // so changing them bumps generation too.
    s.kubectl_ok(&["annotate", "deployment", "web", "team=edge"]);
    let d = get_json(&s, &["deployment", "web"]);
    assert_eq!(d["metadata"]["generation"], 3, "{d}");
    let table = s.kubectl_ok(&["get", "deploy", "web", "--no-headers"]);
    let row: Vec<&str> = table.split_whitespace().collect();
    assert_eq!(&row[..4], ["web", "2/3", "3", "2"], "{table}");

    // autoscaling/v1 and v2 HorizontalPodAutoscalers are one stored object
    // (pkg/apis/autoscaling/v1/conversion.go: the CPU target is v1's field).
    s.kubectl_ok(&[
        "autoscale",
        "deployment",
        "web",
        "--min=2",
        "--max=5",
        "--cpu-percent=60",
    ]);
    let v1 = get_json(&s, &["horizontalpodautoscalers.v1.autoscaling", "web"]);
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60, "{v1}");
    assert_eq!(v1["spec"]["minReplicas"], 2);
    let v2 = get_json(&s, &["horizontalpodautoscalers.v2.autoscaling", "web"]);
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 60}}}])
    );
    let table = s.kubectl_ok(&["get", "hpa"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    assert!(table.contains("Deployment/web"), "{table}");
}

#[test]
fn jobs_cronjobs_statefulsets_and_daemonsets_get_upstream_defaults() {
    let s = server();
    s.kubectl_ok(&[
        "create",
        "job",
        "pi",
        "--image=perl:5.34.0",
        "--",
        "perl",
        "-e",
        "1",
    ]);
    let job = get_json(&s, &["job", "pi"]);
    // pkg/apis/batch/v1 TestSetDefaultJob ("All unspecified -> sets all to default values").
    let spec = &job["spec"];
    for (field, want) in [
        ("completions", json!(1)),
        ("parallelism", json!(1)),
        ("backoffLimit", json!(6)),
        ("completionMode", json!("NonIndexed")),
        ("suspend", json!(false)),
        ("podReplacementPolicy", json!("TerminatingOrFailed")),
        ("manualSelector", json!(false)),
    ] {
        assert_eq!(spec[field], want, "spec.{field}: {job}");
    }
    // pkg/registry/batch/job strategy: the generated selector and labels.
    let uid = job["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        spec["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    let labels = &spec["template"]["metadata"]["labels"];
    assert_eq!(labels["batch.kubernetes.io/job-name"], "pi");
    assert_eq!(labels["job-name"], "pi");
    assert_eq!(labels["controller-uid"], uid);
    assert_eq!(
        job["metadata"]["labels"], *labels,
        "a Job without labels takes its template's"
    );
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(
        spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );

    s.kubectl_ok(&[
        "create",
        "cronjob",
        "tick",
        "--image=busybox:1.36",
        "--schedule=*/5 * * * *",
    ]);
    let cj = get_json(&s, &["cronjob", "tick"]);
    // pkg/apis/batch/v1 TestSetDefaultCronJob.
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(cj["spec"]["suspend"], false);
    assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(cj["spec"]["failedJobsHistoryLimit"], 1);
    assert!(
        cj["spec"]["jobTemplate"]["spec"]
            .get("backoffLimit")
            .is_none(),
        "Job defaults are not applied to a CronJob's template: {cj}"
    );
    let table = s.kubectl_ok(&["get", "cronjobs"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"
        ]
    );

    s.apply(
        r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  serviceName: db
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:16"}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: "busybox:1.36"}]}
"#,
    );
    // pkg/apis/apps/v1 TestSetDefaultStatefulSet; maxUnavailable as
    // kube-apiserver 1.37.2 answers (MaxUnavailableStatefulSet on).
    let sts = get_json(&s, &["statefulset", "db"]);
    assert_eq!(sts["spec"]["replicas"], 1);
    assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        sts["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}})
    );
    assert_eq!(sts["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        sts["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    let claim = &sts["spec"]["volumeClaimTemplates"][0];
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    assert_eq!(claim["status"], json!({"phase": "Pending"}));
    // pkg/apis/apps/v1 TestSetDefaultDaemonSetSpec; the registry's template generation.
    let ds = get_json(&s, &["daemonset", "agent"]);
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "1"
    );
    s.kubectl_ok(&["set", "image", "daemonset/agent", "agent=busybox:1.37"]);
    let ds = get_json(&s, &["daemonset", "agent"]);
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "2"
    );
    assert_eq!(ds["metadata"]["generation"], 2);
}

#[test]
fn a_pod_is_pending_with_its_qos_class_tolerations_and_priority() {
    let s = server();
    s.kubectl_ok(&["run", "box", "--image=busybox:1.36", "--restart=Never"]);
    let pod = get_json(&s, &["pod", "box"]);
    // pkg/registry/core/pod strategy PrepareForCreate.
    assert_eq!(pod["status"]["phase"], "Pending", "{pod}");
    assert_eq!(pod["status"]["qosClass"], "BestEffort");
    assert_eq!(pod["metadata"]["generation"], 1);
    // pkg/apis/core/v1 TestPodDefaults: a Pod (not a template) also gets enableServiceLinks.
    assert_eq!(pod["spec"]["enableServiceLinks"], true);
    assert_eq!(pod["spec"]["restartPolicy"], "Never");
    // The DefaultTolerationSeconds and Priority admission plugins.
    assert_eq!(
        pod["spec"]["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ])
    );
    assert_eq!(pod["spec"]["priority"], 0);
    assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    let table = s.kubectl_ok(&["get", "pods"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["box", "0/1", "Pending", "0"], "{table}");
}

#[test]
fn kinds_without_a_printer_use_upstreams_default_table() {
    let s = server();
    s.apply(
        r#"
apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec: {limits: [{type: Container, max: {cpu: "1"}}]}
"#,
    );
    let table = s.kubectl_ok(&["get", "limitranges"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "CREATED", "AT"]);
    // pkg/apis/core/v1 SetDefaults_LimitRangeItem: default from max, defaultRequest from default.
    let lr = get_json(&s, &["limitrange", "limits"]);
    assert_eq!(lr["spec"]["limits"][0]["default"], json!({"cpu": "1"}));
    assert_eq!(
        lr["spec"]["limits"][0]["defaultRequest"],
        json!({"cpu": "1"})
    );
}

/// `kubectl create --raw`: the exit status and what kubectl printed.
fn post_raw(s: &Server, path: &str, body: &Value) -> (bool, String) {
    let out = s.kubectl_with_stdin(
        &["create", "--raw", path, "-f", "-"],
        Some(&body.to_string()),
    );
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn pod_subresources_answer_as_a_cluster_without_kubelets() {
    let s = server();
    s.kubectl_ok(&["run", "box", "--image=busybox:1.36", "--restart=Never"]);
    // pkg/registry/core/pod/rest/log.go: no host, no log (204, empty).
    assert_eq!(s.kubectl_ok(&["logs", "box"]), "");
    // streamLocation: exec and attach need a host.
    let out = s.kubectl(&["exec", "box", "--", "true"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pod box does not have a host assigned"),
        "{stderr}"
    );
    let out = s.kubectl(&["logs", "box", "-c", "other"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("container other is not valid for pod box"),
        "{out:?}"
    );

    // BindingREST.Create: the pod is assigned and scheduled, once.
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "box"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
    let path = "/api/v1/namespaces/default/pods/box/binding";
    let (ok, answer) = post_raw(&s, path, &binding);
    assert!(ok, "{answer}");
    assert!(answer.contains(r#""status":"Success""#), "{answer}");
    let pod = get_json(&s, &["pod", "box"]);
    assert_eq!(pod["spec"]["nodeName"], "node-1");
    let scheduled = pod["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap();
    assert_eq!(scheduled["status"], "True");
    let (ok, answer) = post_raw(&s, path, &binding);
    assert!(!ok);
    assert!(
        answer.contains(r#"Operation cannot be fulfilled on pods/binding "box": pod box is already assigned to node "node-1""#),
        "{answer}"
    );
    // The legacy `bindings` resource binds the pod its Binding names.
    s.kubectl_ok(&["run", "other", "--image=busybox:1.36", "--restart=Never"]);
    let legacy = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "other"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-2"}});
    let (ok, answer) = post_raw(&s, "/api/v1/namespaces/default/bindings", &legacy);
    assert!(ok, "{answer}");
    assert_eq!(
        get_json(&s, &["pod", "other"])["spec"]["nodeName"],
        "node-2"
    );
    let (ok, answer) = post_raw(&s, "/api/v1/namespaces/default/bindings", &legacy);
    assert!(!ok);
    assert!(
        answer.contains(r#"pod other is already assigned to node "node-2""#),
        "{answer}"
    );
    let missing = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "ghost"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-2"}});
    let (ok, answer) = post_raw(&s, "/api/v1/namespaces/default/bindings", &missing);
    assert!(
        !ok && answer.contains(r#"pods "ghost" not found"#),
        "{answer}"
    );

    // GetConnectionInfo: a bound pod's node must exist.
    let out = s.kubectl(&["logs", "box"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(r#"nodes "node-1" not found"#),
        "{out:?}"
    );

    // Eviction: a pending pod is deleted whatever budgets say (canIgnorePDB).
    s.kubectl_ok(&[
        "run",
        "pending",
        "--image=busybox:1.36",
        "--labels=app=guarded",
    ]);
    s.apply(
        r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: guard}
spec: {minAvailable: 1, selector: {matchLabels: {app: guarded}}}
"#,
    );
    let eviction = |name: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}});
    let (ok, answer) = post_raw(
        &s,
        "/api/v1/namespaces/default/pods/pending/eviction",
        &eviction("pending"),
    );
    assert!(ok, "{answer}");
    assert!(s.kubectl(&["get", "pod", "pending"]).status.code() != Some(0));
    // A running pod under a budget no controller has counted yet: 429.
    s.kubectl_ok(&[
        "run",
        "running",
        "--image=busybox:1.36",
        "--labels=app=guarded",
    ]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "running",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running"}}"#,
    ]);
    let (ok, answer) = post_raw(
        &s,
        "/api/v1/namespaces/default/pods/running/eviction",
        &eviction("running"),
    );
    assert!(!ok);
    assert!(
        answer.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{answer}"
    );
    assert!(s.kubectl(&["get", "pod", "running"]).status.success());

    // Once the disruption controller has counted it (status written as it
    // writes it), the budget allows one eviction: checkAndDecrement takes it
    // and records the pod; the next running pod gets 429 with the counts.
    s.kubectl_ok(&[
        "patch",
        "pdb",
        "guard",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"observedGeneration":1,"disruptionsAllowed":1,"currentHealthy":2,"desiredHealthy":1,"expectedPods":2}}"#,
    ]);
    let (ok, answer) = post_raw(
        &s,
        "/api/v1/namespaces/default/pods/running/eviction",
        &eviction("running"),
    );
    assert!(ok, "{answer}");
    assert!(!s.kubectl(&["get", "pod", "running"]).status.success());
    let budget = get_json(&s, &["pdb", "guard"]);
    assert_eq!(budget["status"]["disruptionsAllowed"], 0, "{budget}");
    assert!(budget["status"]["disruptedPods"]["running"].is_string());
    let allowed = budget["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "DisruptionAllowed")
        .unwrap();
    assert_eq!(allowed["status"], "False");
    assert_eq!(allowed["reason"], "InsufficientPods");
    s.kubectl_ok(&[
        "run",
        "second",
        "--image=busybox:1.36",
        "--labels=app=guarded",
    ]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "second",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running"}}"#,
    ]);
    // kubectl -v=8 shows the Status body with its cause.
    let out = s.kubectl_with_stdin(
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/default/pods/second/eviction",
            "-f",
            "-",
            "-v=8",
        ],
        Some(&eviction("second").to_string()),
    );
    assert!(!out.status.success());
    let answer = String::from_utf8_lossy(&out.stderr);
    assert!(
        answer.contains("The disruption budget guard needs 1 healthy pods and has 2 currently"),
        "{answer}"
    );
    assert!(s.kubectl(&["get", "pod", "second"]).status.success());
}

/// kubebuilder's generated operator bundle (CRDs, Namespace, ServiceAccount,
/// RBAC, Services, Deployment, webhook configurations), plus a PDB.
fn operator_bundle() -> String {
    let bundle = include_str!("data/kubebuilder-project-v4-install.yaml");
    format!(
        "{bundle}---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: manager, namespace: project-v4-system}}\nspec: {{minAvailable: 1, selector: {{matchLabels: {{control-plane: controller-manager}}}}}}\n"
    )
}

/// Every object of the bundle with its resourceVersion.
fn versions(s: &Server, bundle: &str) -> Vec<(String, String)> {
    let out = s.kubectl_with_stdin(&["get", "-f", "-", "-o", "json"], Some(bundle));
    assert!(out.status.success(), "{out:?}");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                format!("{}/{}", o["kind"], o["metadata"]["name"]),
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn an_operator_bundle_applies_and_reapplies_as_a_no_op() {
    let s = server();
    let bundle = operator_bundle();
    let apply = |extra: &[&str]| {
        let mut args = vec!["apply", "-f", "-"];
        args.extend_from_slice(extra);
        let out = s.kubectl_with_stdin(&args, Some(&bundle));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "kubectl apply {extra:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout + &String::from_utf8_lossy(&out.stderr)
    };
    let first = apply(&[]);
    assert_eq!(first.lines().count(), 24, "{first}");
    assert!(first.lines().all(|l| l.ends_with(" created")), "{first}");
    let before = versions(&s, &bundle);
    let again = apply(&[]);
    assert_eq!(
        versions(&s, &bundle),
        before,
        "a second client-side apply writes nothing:\n{again}"
    );
    // kubectl sends a patch (and prints "configured") where its three-way diff
    // cannot see equality, against kube-apiserver too: a PDB's selector has
    // patch strategy `replace` (sent whole), and webhook `rules` are atomic
    // lists the server defaulted (`scope: "*"`). Everything else is unchanged.
    for line in again.lines() {
        let resent =
            line.starts_with("poddisruptionbudget.") || line.contains("webhookconfiguration.");
        assert!(line.ends_with(" unchanged") || resent, "{again}");
    }
    // Taking over from client-side apply conflicts where kube-apiserver's
    // last-applied comparison conflicts too: webhook `rules` are atomic lists
    // the server defaulted, so live and last-applied differ.
    let takeover = apply(&["--server-side", "--force-conflicts"]);
    assert!(!takeover.contains("Warning"), "{takeover}");
    let before = versions(&s, &bundle);
    let ssa_again = apply(&["--server-side", "--force-conflicts"]);
    assert_eq!(
        versions(&s, &bundle),
        before,
        "a second server-side apply changes nothing:\n{ssa_again}"
    );
    let deployment = get_json(
        &s,
        &[
            "deployment",
            "project-v4-controller-manager",
            "-n",
            "project-v4-system",
        ],
    );
    assert_eq!(deployment["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["timeoutSeconds"],
        1
    );
}

#[test]
fn the_system_priority_classes_exist_from_the_start() {
    let s = server();
    // pkg/apis/scheduling/v1/helpers.go systemPriorityClasses.
    let classes = get_json(&s, &["priorityclasses"]);
    let value = |name: &str| {
        classes["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["metadata"]["name"] == name)
            .map(|c| c["value"].clone())
    };
    assert_eq!(value("system-node-critical"), Some(json!(2000001000)));
    assert_eq!(value("system-cluster-critical"), Some(json!(2000000000)));
    let class = get_json(&s, &["priorityclass", "system-cluster-critical"]);
    assert_eq!(class["preemptionPolicy"], "PreemptLowerPriority");
}

#[test]
fn endpoints_and_endpoint_slices_get_their_port_defaults() {
    let s = server();
    s.apply(
        r#"
apiVersion: v1
kind: Endpoints
metadata: {name: legacy}
subsets: [{addresses: [{ip: 10.1.2.3}], ports: [{port: 80}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: legacy-1, labels: {kubernetes.io/service-name: legacy}}
addressType: IPv4
endpoints: [{addresses: [10.1.2.3]}]
ports: [{port: 80}]
"#,
    );
    // pkg/apis/core/v1 TestSetDefaultEndpointsProtocol.
    let endpoints = get_json(&s, &["endpoints", "legacy"]);
    assert_eq!(endpoints["subsets"][0]["ports"][0]["protocol"], "TCP");
    // pkg/apis/discovery/v1 SetDefaults_EndpointPort: name "" and protocol TCP.
    let slice = get_json(&s, &["endpointslice", "legacy-1"]);
    assert_eq!(
        slice["ports"][0],
        json!({"name": "", "port": 80, "protocol": "TCP"})
    );
}

#[test]
fn component_statuses_report_the_control_plane() {
    let s = server();
    let out = s.kubectl(&["get", "componentstatuses"]);
    assert!(out.status.success(), "{out:?}");
    // The deprecation warning of every v1 ComponentStatus request.
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Warning: v1 ComponentStatus is deprecated in v1.19+"),
        "{out:?}"
    );
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    // pkg/printers/internalversion componentStatusColumnDefinitions.
    assert_eq!(header, ["NAME", "STATUS", "MESSAGE", "ERROR"], "{table}");
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {table}"))
            .to_string()
    };
    // kubext runs the controllers itself; no kube-scheduler listens here.
    let cells =
        |name: &str| -> Vec<String> { row(name).split_whitespace().map(str::to_owned).collect() };
    assert_eq!(
        cells("controller-manager")[1..],
        ["Healthy", "ok"],
        "{table}"
    );
    assert_eq!(cells("scheduler")[1], "Unhealthy", "{table}");
    assert!(
        row("scheduler").contains(r#"Get "https://127.0.0.1:10259/healthz""#),
        "{table}"
    );
    // Embedded storage: no etcd members to report.
    assert!(!table.contains("etcd-0"), "{table}");
    let cs = get_json(&s, &["cs", "controller-manager"]);
    assert_eq!(
        cs["conditions"],
        json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );
    let out = s.kubectl(&["delete", "cs", "scheduler"]);
    assert!(!out.status.success());
}

/// The `f:ports` entries of `manager`'s managedFields.
fn owned_ports(service: &Value, manager: &str) -> Vec<String> {
    let entry = service["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == manager)
        .unwrap_or_else(|| panic!("no {manager} in {service}"));
    let mut keys: Vec<String> = entry["fieldsV1"]["f:spec"]["f:ports"]
        .as_object()
        .map(|o| o.keys().filter(|k| k.starts_with("k:")).cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

#[test]
fn server_side_apply_keys_service_ports_by_port_and_protocol() {
    let s = server();
    // A DNS-like Service: port 53 twice, told apart by protocol only.
    let dns = |udp: bool| {
        let mut ports = vec![json!({"name": "dns-tcp", "port": 53, "protocol": "TCP"})];
        if udp {
            ports.push(json!({"name": "dns", "port": 53, "protocol": "UDP"}));
        }
        ports.push(json!({"name": "metrics", "port": 9153}));
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "dns"},
            "spec": {"selector": {"app": "dns"}, "ports": ports}})
        .to_string()
    };
    let apply = |manifest: String| {
        let out = s.kubectl_with_stdin(
            &["apply", "--server-side", "--field-manager=ops", "-f", "-"],
            Some(&manifest),
        );
        assert!(out.status.success(), "{out:?}");
    };
    apply(dns(true));
    let service = get_json(&s, &["service", "dns", "--show-managed-fields"]);
    // structured-merge-diff's keys: every key field, a missing protocol as
    // its default (TCP).
    assert_eq!(
        owned_ports(&service, "ops"),
        [
            r#"k:{"port":53,"protocol":"TCP"}"#,
            r#"k:{"port":53,"protocol":"UDP"}"#,
            r#"k:{"port":9153,"protocol":"TCP"}"#,
        ]
    );
    let rv = service["metadata"]["resourceVersion"].clone();
    apply(dns(true));
    assert_eq!(
        get_json(&s, &["service", "dns"])["metadata"]["resourceVersion"],
        rv,
        "a second apply writes nothing"
    );
    // Leaving the UDP port out of the next apply removes that port alone.
    apply(dns(false));
    let service = get_json(&s, &["service", "dns"]);
    let ports: Vec<(i64, String)> = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["port"].as_i64().unwrap(),
                p["protocol"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(ports, [(53, "TCP".into()), (9153, "TCP".into())]);
}

#[test]
fn a_pod_on_a_node_is_deleted_gracefully() {
    let s = server();
    s.kubectl_ok(&["run", "bound", "--image=busybox:1.36", "--restart=Never"]);
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bound"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
    let (ok, answer) = post_raw(
        &s,
        "/api/v1/namespaces/default/pods/bound/binding",
        &binding,
    );
    assert!(ok, "{answer}");
    let generation = get_json(&s, &["pod", "bound"])["metadata"]["generation"]
        .as_i64()
        .unwrap();
    // BeforeDelete: kept for its terminationGracePeriodSeconds (30), for the
    // kubelet to finish; its generation bumped once.
    s.kubectl_ok(&["delete", "pod", "bound", "--wait=false"]);
    let pod = get_json(&s, &["pod", "bound"]);
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30, "{pod}");
    assert_eq!(pod["metadata"]["generation"], generation + 1);
    let deadline = apimachinery_time(&pod["metadata"]["deletionTimestamp"]);
    // A second delete changes nothing; a shorter period moves the deadline back.
    s.kubectl_ok(&["delete", "pod", "bound", "--wait=false"]);
    assert_eq!(
        get_json(&s, &["pod", "bound"])["metadata"]["resourceVersion"],
        pod["metadata"]["resourceVersion"]
    );
    s.kubectl_ok(&[
        "delete",
        "pod",
        "bound",
        "--wait=false",
        "--grace-period=10",
    ]);
    let shorter = get_json(&s, &["pod", "bound"]);
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 10);
    let moved = deadline - apimachinery_time(&shorter["metadata"]["deletionTimestamp"]);
    assert_eq!(moved, 20, "{shorter}");
    let table = s.kubectl_ok(&["get", "pods"]);
    assert!(table.contains("Terminating"), "{table}");
    // Force deletion (period 0) removes it now.
    s.kubectl_ok(&["delete", "pod", "bound", "--grace-period=0", "--force"]);
    let out = s.kubectl(&["get", "pod", "bound"]);
    assert!(!out.status.success());

    // A pod no node runs goes at once.
    s.kubectl_ok(&["run", "loose", "--image=busybox:1.36", "--restart=Never"]);
    s.kubectl_ok(&["delete", "pod", "loose", "--wait=false"]);
    assert!(!s.kubectl(&["get", "pod", "loose"]).status.success());
}

/// Seconds since the epoch of an RFC 3339 timestamp.
fn apimachinery_time(v: &Value) -> i64 {
    let text = v.as_str().unwrap();
    let out = std::process::Command::new("date")
        .args(["-d", text, "+%s"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn pods_resize_through_their_resize_subresource() {
    let s = server();
    s.apply(
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
              "resources": {"requests": {"cpu": "100m", "memory": "100Mi"},
                            "limits": {"cpu": "200m", "memory": "200Mi"}}}]}}"#,
    );
    let generation = get_json(&s, &["pod", "app"])["metadata"]["generation"]
        .as_i64()
        .unwrap();
    // kubectl 1.33 knows the subresource.
    let kubectl = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33";
    let patch = |body: &str| {
        s.run_kubectl(
            kubectl,
            &[
                "patch",
                "pod",
                "app",
                "--subresource=resize",
                "--type=strategic",
                "-p",
                body,
            ],
            None,
        )
    };
    let out = patch(
        r#"{"spec":{"containers":[{"name":"app","image":"evil","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m"}}}]}}"#,
    );
    assert!(out.status.success(), "{out:?}");
    let pod = get_json(&s, &["pod", "app"]);
    let container = &pod["spec"]["containers"][0];
    assert_eq!(container["resources"]["requests"]["cpu"], "150m");
    assert_eq!(container["resources"]["limits"]["cpu"], "300m");
    // Only resources are written through resize; the spec change bumps generation.
    assert_eq!(container["image"], "nginx:1.27");
    assert_eq!(pod["metadata"]["generation"], generation + 1);
    // ValidatePodResize: the QoS class may not change.
    let out = patch(
        r#"{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"300m","memory":"200Mi"}}}]}}"#,
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing"#),
        "{stderr}"
    );
    // The main resource still refuses resource changes.
    let out = s.kubectl(&[
        "patch",
        "pod",
        "app",
        "--type=strategic",
        "-p",
        r#"{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"120m"}}}]}}"#,
    ]);
    assert!(!out.status.success());
}
