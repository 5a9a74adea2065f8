//! Parameters of kube-apiserver's operations as 1.37.2 documents them: the query
//! parameters upstream derives from its options structs (`AddObjectParams` over
//! `ListOptions`, `PodLogOptions`, ...) and their descriptions (the structs'
//! `SwaggerDoc`).

/// One query parameter: name, JSON type, description.
pub(crate) type Field = (&'static str, &'static str, &'static str);

const ALLOW_WATCH_BOOKMARKS: &str = "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.";
const EXEC_COMMAND: &str =
    "Command is the remote command to execute. argv array. Not executed within a shell.";
const EXEC_CONTAINER: &str = "Container in which to execute the command. Defaults to only container if there is only one container in the pod.";
const LOG_CONTAINER: &str = "The container for which to stream logs. Defaults to only container if there is one container in the pod.";
const ATTACH_CONTAINER: &str = "The container in which to execute the command. Defaults to only container if there is only one container in the pod.";
const CONTINUE: &str = "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.";
const DRY_RUN: &str = "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed";
const FIELD_MANAGER: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.";
const FIELD_MANAGER_PATCH: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).";
const FIELD_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their fields. Defaults to everything.";
const FIELD_VALIDATION: &str = "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.";
const LOG_FOLLOW: &str = "Follow the log stream of the pod. Defaults to false.";
const FORCE: &str = "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.";
const GRACE_PERIOD_SECONDS: &str = "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.";
const IGNORE_STORE_READ_ERROR: &str = "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it";
const LOG_INSECURE_SKIP_TLS_VERIFY_BACKEND: &str = "insecureSkipTLSVerifyBackend indicates that the apiserver should not confirm the validity of the serving certificate of the backend it is connecting to.  This will make the HTTPS connection between the apiserver and the backend insecure. This means the apiserver cannot verify the log data it is receiving came from the real kubelet.  If the kubelet is configured to verify the apiserver's TLS credentials, it does not mean the connection to the real kubelet is vulnerable to a man in the middle attack (e.g. an attacker could not intercept the actual log data coming from the real kubelet).";
const LABEL_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their labels. Defaults to everything.";
const LIMIT: &str = "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.";
const LOG_LIMIT_BYTES: &str = "If set, the number of bytes to read from the server before terminating the log output. This may not display a complete final line of logging, and may return slightly more or slightly less than the specified limit.";
pub(crate) const NAMESPACE: &str = "object name and auth scope, such as for teams and projects";
const ORPHAN_DEPENDENTS: &str = "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.";
pub(crate) const PATH: &str = "path to the resource";
const NODE_PROXY_PATH: &str = "Path is the URL path to use for the current proxy request to node.";
const POD_PROXY_PATH: &str = "Path is the URL path to use for the current proxy request to pod.";
const SERVICE_PROXY_PATH: &str = "Path is the part of URLs that include service endpoints, suffixes, and parameters to use for the current proxy request to service. For example, the whole request URL is http://localhost/api/v1/namespaces/kube-system/services/elasticsearch-logging/_search?q=user:kimchy. Path is _search?q=user:kimchy.";
const PORT_FORWARD_PORTS: &str = "List of ports to forward Required when using WebSockets";
pub(crate) const PRETTY: &str = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).";
const LOG_PREVIOUS: &str = "Return previous terminated container logs. Defaults to false.";
const PROPAGATION_POLICY: &str = "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.";
const RESOURCE_VERSION: &str = "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const RESOURCE_VERSION_MATCH: &str = "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const SEND_INITIAL_EVENTS: &str = "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise.";
const SHARD_SELECTOR: &str = "shardSelector restricts the list of returned objects using a CEL-based shard selector expression. The format uses the shardRange() function combined with || (logical OR) to specify one or more hash ranges:\n\n  shardRange(object.metadata.uid, '0x0', '0x8000000000000000')\n  shardRange(object.metadata.uid, '0x0', '0x8000000000000000') || shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')\n\nField paths use CEL-style object-rooted syntax (e.g. \"object.metadata.uid\"), NOT the fieldSelector format (\"metadata.uid\"). Currently supported paths:\n  - object.metadata.uid\n  - object.metadata.namespace\n\nhexStart and hexEnd are single-quoted CEL string literals with a '0x' prefix, defining the inclusive lower and exclusive upper bounds over the 64-bit FNV-1a hash space. The full range is [0x0, 0x10000000000000000), where the exclusive upper bound equals 2^64.\n\nExamples:\n  2-shard split:\n    shard 0: shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')\n    shard 1: shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')\n  4-shard split:\n    shard 0: shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')\n    shard 1: shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')\n    shard 2: shardRange(object.metadata.uid, '0x8000000000000000', '0xc000000000000000')\n    shard 3: shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')\n\nThis is an alpha field and requires enabling the ShardedListAndWatch feature gate.";
const LOG_SINCE_SECONDS: &str = "A relative time in seconds before the current time from which to show logs. If this value precedes the time a pod was started, only logs since the pod start will be returned. If this value is in the future, no logs will be returned. Only one of sinceSeconds or sinceTime may be specified.";
const EXEC_STDERR: &str = "Redirect the standard error stream of the pod for this call.";
const ATTACH_STDERR: &str = "Stderr if true indicates that stderr is to be redirected for the attach call. Defaults to true.";
const EXEC_STDIN: &str =
    "Redirect the standard input stream of the pod for this call. Defaults to false.";
const ATTACH_STDIN: &str = "Stdin if true, redirects the standard input stream of the pod for this call. Defaults to false.";
const EXEC_STDOUT: &str = "Redirect the standard output stream of the pod for this call.";
const ATTACH_STDOUT: &str = "Stdout if true indicates that stdout is to be redirected for the attach call. Defaults to true.";
const LOG_STREAM: &str = "Specify which container log stream to return to the client. Acceptable values are \"All\", \"Stdout\" and \"Stderr\". If not specified, \"All\" is used, and both stdout and stderr are returned interleaved. Note that when \"TailLines\" is specified, \"Stream\" can only be set to nil or \"All\".";
const LOG_TAIL_LINES: &str = "If set, the number of lines from the end of the logs to show. If not specified, logs are shown from the creation of the container or sinceSeconds or sinceTime. Note that when \"TailLines\" is specified, \"Stream\" can only be set to nil or \"All\".";
const TIMEOUT_SECONDS: &str = "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.";
const LOG_TIMESTAMPS: &str = "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log output. Defaults to false.";
const ATTACH_TTY: &str = "TTY if true indicates that a tty will be allocated for the attach call. This is passed through the container runtime so the tty is allocated on the worker node by the container runtime. Defaults to false.";
const EXEC_TTY: &str =
    "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false.";
const WATCH: &str = "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.";

/// `ListOptions`: list, watch and the deprecated watch paths.
pub(crate) const LIST_OPTIONS: &[Field] = &[
    ("allowWatchBookmarks", "boolean", ALLOW_WATCH_BOOKMARKS),
    ("continue", "string", CONTINUE),
    ("fieldSelector", "string", FIELD_SELECTOR),
    ("labelSelector", "string", LABEL_SELECTOR),
    ("limit", "integer", LIMIT),
    ("resourceVersion", "string", RESOURCE_VERSION),
    ("resourceVersionMatch", "string", RESOURCE_VERSION_MATCH),
    ("sendInitialEvents", "boolean", SEND_INITIAL_EVENTS),
    ("shardSelector", "string", SHARD_SELECTOR),
    ("timeoutSeconds", "integer", TIMEOUT_SECONDS),
    ("watch", "boolean", WATCH),
];

/// `GetOptions` (only custom resources' reads document it).
pub(crate) const GET_OPTIONS: &[Field] = &[("resourceVersion", "string", RESOURCE_VERSION)];

/// `CreateOptions` and `UpdateOptions`.
pub(crate) const CREATE_OPTIONS: &[Field] = &[
    ("dryRun", "string", DRY_RUN),
    ("fieldManager", "string", FIELD_MANAGER),
    ("fieldValidation", "string", FIELD_VALIDATION),
];

/// `PatchOptions`.
pub(crate) const PATCH_OPTIONS: &[Field] = &[
    ("dryRun", "string", DRY_RUN),
    ("fieldManager", "string", FIELD_MANAGER_PATCH),
    ("fieldValidation", "string", FIELD_VALIDATION),
    ("force", "boolean", FORCE),
];

/// `DeleteOptions` (its struct fields, `preconditions`, are not parameters).
pub(crate) const DELETE_OPTIONS: &[Field] = &[
    ("dryRun", "string", DRY_RUN),
    ("gracePeriodSeconds", "integer", GRACE_PERIOD_SECONDS),
    (
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "boolean",
        IGNORE_STORE_READ_ERROR,
    ),
    ("orphanDependents", "boolean", ORPHAN_DEPENDENTS),
    ("propagationPolicy", "string", PROPAGATION_POLICY),
];

/// `PodLogOptions` (`pods/log`).
pub(crate) const POD_LOG_OPTIONS: &[Field] = &[
    ("container", "string", LOG_CONTAINER),
    ("follow", "boolean", LOG_FOLLOW),
    (
        "insecureSkipTLSVerifyBackend",
        "boolean",
        LOG_INSECURE_SKIP_TLS_VERIFY_BACKEND,
    ),
    ("limitBytes", "integer", LOG_LIMIT_BYTES),
    ("previous", "boolean", LOG_PREVIOUS),
    ("sinceSeconds", "integer", LOG_SINCE_SECONDS),
    ("stream", "string", LOG_STREAM),
    ("tailLines", "integer", LOG_TAIL_LINES),
    ("timestamps", "boolean", LOG_TIMESTAMPS),
];

/// `PodAttachOptions` (`pods/attach`).
pub(crate) const POD_ATTACH_OPTIONS: &[Field] = &[
    ("container", "string", ATTACH_CONTAINER),
    ("stderr", "boolean", ATTACH_STDERR),
    ("stdin", "boolean", ATTACH_STDIN),
    ("stdout", "boolean", ATTACH_STDOUT),
    ("tty", "boolean", ATTACH_TTY),
];

/// `PodExecOptions` (`pods/exec`).
pub(crate) const POD_EXEC_OPTIONS: &[Field] = &[
    ("command", "string", EXEC_COMMAND),
    ("container", "string", EXEC_CONTAINER),
    ("stderr", "boolean", EXEC_STDERR),
    ("stdin", "boolean", EXEC_STDIN),
    ("stdout", "boolean", EXEC_STDOUT),
    ("tty", "boolean", EXEC_TTY),
];

/// `PodPortForwardOptions` (`pods/portforward`).
pub(crate) const POD_PORT_FORWARD_OPTIONS: &[Field] = &[("ports", "integer", PORT_FORWARD_PORTS)];

/// `PodProxyOptions`, `NodeProxyOptions`, `ServiceProxyOptions` (`*/proxy`).
pub(crate) const POD_PROXY_OPTIONS: &[Field] = &[("path", "string", POD_PROXY_PATH)];
pub(crate) const NODE_PROXY_OPTIONS: &[Field] = &[("path", "string", NODE_PROXY_PATH)];
pub(crate) const SERVICE_PROXY_OPTIONS: &[Field] = &[("path", "string", SERVICE_PROXY_PATH)];

/// A collection delete's: `DeleteOptions` and `ListOptions` without watch, by
/// name.
pub(crate) const DELETE_COLLECTION_OPTIONS: &[Field] = &[
    ("continue", "string", CONTINUE),
    ("dryRun", "string", DRY_RUN),
    ("fieldSelector", "string", FIELD_SELECTOR),
    ("gracePeriodSeconds", "integer", GRACE_PERIOD_SECONDS),
    (
        "ignoreStoreReadErrorWithClusterBreakingPotential",
        "boolean",
        IGNORE_STORE_READ_ERROR,
    ),
    ("labelSelector", "string", LABEL_SELECTOR),
    ("limit", "integer", LIMIT),
    ("orphanDependents", "boolean", ORPHAN_DEPENDENTS),
    ("propagationPolicy", "string", PROPAGATION_POLICY),
    ("resourceVersion", "string", RESOURCE_VERSION),
    ("resourceVersionMatch", "string", RESOURCE_VERSION_MATCH),
    ("sendInitialEvents", "boolean", SEND_INITIAL_EVENTS),
    ("shardSelector", "string", SHARD_SELECTOR),
    ("timeoutSeconds", "integer", TIMEOUT_SECONDS),
];
