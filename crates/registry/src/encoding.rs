//! The cached encoding: the one place that knows the bytes of an object as
//! this process writes, stores, caches and sends them, and reads them back
//! without decoding.
//!
//! - Member order: kube-apiserver's (`apimachinery::json` writes it). Built-in
//!   kinds: `kind`, `apiVersion`, `metadata` first, metadata in `ObjectMeta`'s
//!   order. Custom resources (unstructured upstream): every object's members
//!   sorted, so `apiVersion`, `kind`, then `metadata` (unless another member
//!   sorts before it) with its members sorted.
//! - Stored bytes are the served encoding without `resourceVersion`
//!   ([`encode_for_storage`]); the revision is spliced back in where the
//!   order puts it ([`splice_revision`]), instead of parsing and encoding
//!   again: after `uid` in `ObjectMeta`'s order (the front of metadata), and
//!   in a custom resource's sorted metadata before the first member after
//!   `resourceVersion` (`selfLink`, `uid`: its end, found by skipping the
//!   members before it).
//! - The head (type meta and the metadata controllers follow), the revision
//!   and the apiVersion are scanned from the front of such bytes
//!   ([`read_head`], [`read_revision`], [`read_api_version`]); bytes another
//!   writer ordered differently are left to serde (`None` here). The scans
//!   find strings as bytes (the keys they know by a compare of a few bytes,
//!   [`key_at`]) and check the ones they keep as text together, once per
//!   object's front ([`texts`]) rather than once per string; what they skip
//!   they skip without decoding (the bytes are well-formed: this process's,
//!   or checked when stored, [`spliceable`]).
//! - Encodings kept for the cache start where rustls copies them fast
//!   ([`tls_copy_buffer`]): watch events and GETs send them as they are.
//!
//! Each shortcut equals the plain way (serde over the whole object): the
//! property tests below check it over generated objects.
//!
//! Hot path: every write, cached read and watch event.

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;
use std::borrow::Cow;

use apimachinery::json;
/// Where `resourceVersion` goes in an encoding's metadata (as the encoder
/// knows it, or as a scan finds it).
use apimachinery::json::RevisionSlot as VersionSlot;

/// The fields controllers read of every object, decoded straight from its
/// JSON: the rest is skipped, not built into a tree (a fraction of the cost
/// of [`Object::value`]). Metadata is validated on every write, so these
/// shapes hold for every kind. Strings read from the front of this
/// process's encodings borrow it (no copy per event); those serde decodes
/// are owned.
#[derive(Debug, Default, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct Head<'a> {
    pub kind: Cow<'a, str>,
    #[serde(rename = "apiVersion")]
    pub api_version: Cow<'a, str>,
    pub metadata: HeadMeta<'a>,
}

#[derive(Debug, Default, PartialEq)]
pub struct HeadMeta<'a> {
    pub name: Cow<'a, str>,
    pub namespace: Cow<'a, str>,
    pub uid: Cow<'a, str>,
    pub deletion_timestamp: Option<Cow<'a, str>>,
    pub finalizers: Option<Vec<String>>,
    pub owner_references: Option<Vec<HeadOwner>>,
}

#[derive(Debug, Default, PartialEq, serde::Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HeadOwner {
    pub uid: String,
    pub block_owner_deletion: Option<bool>,
}

impl Head<'static> {
    /// The head of a decoded object, as `Object::head` reads it from JSON.
    pub fn of(value: &Value) -> Head<'static> {
        use serde::Deserialize;
        Head::deserialize(value).unwrap_or_default()
    }
}

/// The object's encoding as served and cached (every member, its
/// `resourceVersion` included).
pub(crate) fn encode_served(obj: &Value) -> Bytes {
    kept_encoding(obj, json::MetadataMembers::All)
}

/// `stored` (as [`encode_for_storage`] wrote it) with `revision` spliced in as
/// `resourceVersion` where the encoding's order puts it (after `uid` in
/// `ObjectMeta`'s, between `ownerReferences` and `uid` in a custom
/// resource's sorted metadata), so the result is byte for byte the object
/// encoded at that revision. `None` if `stored` does not start as that
/// encoding does (an older encoding of a custom resource in `ObjectMeta`'s
/// order among them: the caller decodes and encodes it anew).
pub(crate) fn splice_revision(stored: &[u8], revision: i64) -> Option<Bytes> {
    Some(splice_at(stored, version_slot(stored)?, revision))
}

/// [`splice_revision`] of bytes this process has just encoded
/// ([`encode_typed_for_storage`], [`encode_for_storage`]: a write's answer):
/// their strings are text already, so type meta is not checked as text
/// again. Equal to [`splice_revision`] on such bytes (a property test).
pub(crate) fn splice_own_revision(stored: &[u8], revision: i64) -> Option<Bytes> {
    let front = front(stored)?;
    let slot = scan_identity(stored, &front, |_, _| {})?;
    Some(splice_at(stored, slot, revision))
}

/// `stored` with `"resourceVersion":"<revision>"` inserted at `slot`.
fn splice_at(stored: &[u8], slot: VersionSlot, revision: i64) -> Bytes {
    let mut digits = [0u8; 20];
    let version = decimal(revision, &mut digits);
    let mut json = tls_copy_buffer(stored.len() + version.len() + 22);
    json.put_slice(&stored[..slot.at]);
    if slot.after_member {
        json.put_u8(b',');
    }
    json.put_slice(b"\"resourceVersion\":\"");
    json.put_slice(version);
    json.put_u8(b'"');
    if !slot.after_member && stored.get(slot.at) != Some(&b'}') {
        json.put_u8(b',');
    }
    json.put_slice(&stored[slot.at..]);
    json.freeze()
}

/// `n` in decimal (as `n.to_string()` writes it), in `digits`: no string
/// allocated and formatted per write's answer.
fn decimal(n: i64, digits: &mut [u8; 20]) -> &[u8] {
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        digits[at] = b'-';
    }
    &digits[at..]
}

/// `metadata.resourceVersion` where [`splice_revision`] puts it, read without
/// decoding; `None` when it is not there.
pub(crate) fn read_revision(json: &[u8]) -> Option<i64> {
    let slot = version_slot(json)?;
    let rest = &json[slot.at..];
    let rest = if slot.after_member {
        rest.strip_prefix(b",")?
    } else {
        rest
    };
    let rest = rest.strip_prefix(b"\"resourceVersion\":\"")?;
    let end = rest.iter().position(|b| *b == b'"')?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// Just past the members before `resourceVersion` in the metadata of `json`
/// (in `ObjectMeta`'s order all strings, at its front: metadata is checked
/// on every write).
fn version_slot(json: &[u8]) -> Option<VersionSlot> {
    let front = checked_front(json)?;
    scan_identity(json, &front, |_, _| {})
}

/// `metadata.name` and `metadata.namespace` (`""` when absent) from the
/// front of the encoding, without decoding; `None` when they are not there
/// as plain strings (escaped: the caller decodes).
pub(crate) fn read_name_and_namespace(json: &[u8]) -> Option<(&str, &str)> {
    let front = front(json)?;
    // `Some(None)`: absent; `None`: not a plain string.
    let (mut name, mut namespace) = (Some(None), Some(None));
    scan_identity(json, &front, |key, value| {
        let plain = plain_bytes(value).map(|(s, _)| Some(s));
        match key {
            Key::Name => name = plain,
            Key::Namespace => namespace = plain,
            _ => {}
        }
    })?;
    // Type meta's strings are checked as they are for every front read.
    let strings = [front.kind, front.api_version, name?, namespace?];
    let [_, _, name, namespace] = texts(json, strings)?;
    Some((name.unwrap_or_default(), namespace.unwrap_or_default()))
}

/// Whether `metadata.name`, as the front of the encoding shows it, is
/// something other than `name` (absent, or a plain string of other bytes:
/// then it is no other text either, and nothing needs checking as text).
/// `false` when that cannot be told so (the caller reads the name), and for
/// an empty `name` (what a reading that fails stands for).
pub(crate) fn named_otherwise(json: &[u8], name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let Some(front) = front(json) else {
        return false;
    };
    // `Some(None)`: absent; `None`: not a plain string.
    let mut found = Some(None);
    let scanned = scan_identity(json, &front, |key, value| {
        if key == Key::Name {
            found = plain_bytes(value).map(|(s, _)| Some(s));
        }
    });
    match (scanned, found) {
        (Some(_), Some(found)) => found.unwrap_or_default() != name.as_bytes(),
        _ => false,
    }
}

/// Walks the members before `resourceVersion` in the metadata of `json`
/// (`name` … `uid` at its front in `ObjectMeta`'s order; every member
/// sorting before it in a custom resource's), handing each key and its raw
/// value to `each`; where they end.
fn scan_identity<'a>(
    json: &'a [u8],
    front: &Front<'a>,
    mut each: impl FnMut(Key, &'a [u8]),
) -> Option<VersionSlot> {
    let start = front.members;
    if front.sorted {
        return scan_sorted_identity(json, start, each);
    }
    let mut at = start;
    loop {
        let rest = &json[at..];
        let member = rest
            .strip_prefix(b",")
            .filter(|_| at > start)
            .unwrap_or(rest);
        let Some((key, _, after_key)) = key_at(member) else {
            break;
        };
        if !key.before_version() {
            break;
        }
        let value = after_key.strip_prefix(b":")?;
        let after_value = skip_string(value)?;
        each(key, &value[..value.len() - after_value.len()]);
        at = json.len() - after_value.len();
    }
    Some(VersionSlot {
        at,
        after_member: at > start,
    })
}

/// [`scan_identity`] in a custom resource's metadata, whose members are
/// sorted (each is checked to follow the one before): the members before
/// `resourceVersion` are skipped, not decoded ([`skip_value`]).
fn scan_sorted_identity<'a>(
    json: &'a [u8],
    start: usize,
    mut each: impl FnMut(Key, &'a [u8]),
) -> Option<VersionSlot> {
    let mut at = start;
    let mut previous: &[u8] = b"";
    loop {
        let rest = &json[at..];
        if rest.first() == Some(&b'}') {
            break;
        }
        let member = if at > start {
            rest.strip_prefix(b",")?
        } else {
            rest
        };
        let (key, text, after_key) = key_at(member)?;
        if at > start && text <= previous {
            return None;
        }
        if text >= b"resourceVersion".as_slice() {
            break;
        }
        let value = after_key.strip_prefix(b":")?;
        let after_value = skip_value(value)?;
        each(key, &value[..value.len() - after_value.len()]);
        previous = text;
        at = json.len() - after_value.len();
    }
    Some(VersionSlot {
        at,
        after_member: at > start,
    })
}

/// What follows the JSON value at the start of `bytes`, found without
/// decoding it: a string by its closing quote, an object or array by its
/// depth (strings inside skipped whole), anything else up to the next `,`,
/// `}` or `]`. For this process's encodings (no whitespace); what is not
/// well-formed is not noticed.
fn skip_value(bytes: &[u8]) -> Option<&[u8]> {
    match bytes.first()? {
        b'"' => skip_string(bytes),
        b'{' | b'[' => skip_container(bytes),
        _ => {
            let end = bytes.iter().position(|b| matches!(b, b',' | b'}' | b']'))?;
            Some(&bytes[end..])
        }
    }
}

/// [`skip_value`] of an object whose members are strings (labels,
/// annotations): string after string, without a look at each byte between
/// them; what is not such an object, as [`skip_value`] skips it.
fn skip_string_map(bytes: &[u8]) -> Option<&[u8]> {
    let mut rest = bytes.strip_prefix(b"{")?;
    if let Some(after) = rest.strip_prefix(b"}") {
        return Some(after);
    }
    loop {
        let member = rest
            .first()
            .filter(|b| **b == b'"')
            .and_then(|_| skip_string(rest)?.strip_prefix(b":"))
            .filter(|value| value.first() == Some(&b'"'))
            .and_then(skip_string);
        match member.and_then(<[u8]>::split_first) {
            Some((b',', after)) => rest = after,
            Some((b'}', after)) => return Some(after),
            _ => return skip_value(bytes),
        }
    }
}

/// [`skip_value`] of an object or array: a loop over what is mostly short
/// keys and brackets (managedFields' `f:…` keys), a byte at a time between
/// strings and a word at a time inside them ([`quote_or_backslash`]: a call
/// to a vector scan costs more than most of these strings).
fn skip_container(bytes: &[u8]) -> Option<&[u8]> {
    const PLAIN: u8 = 0;
    const QUOTE: u8 = 1;
    const OPEN: u8 = 2;
    const CLOSE: u8 = 3;
    const CLASS: [u8; 256] = {
        let mut class = [PLAIN; 256];
        class[b'"' as usize] = QUOTE;
        class[b'{' as usize] = OPEN;
        class[b'[' as usize] = OPEN;
        class[b'}' as usize] = CLOSE;
        class[b']' as usize] = CLOSE;
        class
    };
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&b) = bytes.get(at) {
        match CLASS[usize::from(b)] {
            PLAIN => at += 1,
            QUOTE => loop {
                at += 1;
                at += quote_or_backslash(bytes.get(at..)?)?;
                if bytes[at] == b'"' {
                    at += 1;
                    break;
                }
                // An escape: the backslash and the byte it escapes.
                at += 1;
            },
            OPEN => {
                depth += 1;
                at += 1;
            }
            _ => {
                depth -= 1;
                at += 1;
                if depth == 0 {
                    return Some(&bytes[at..]);
                }
            }
        }
    }
    None
}

/// Where the first `"` or backslash of `bytes` is, a word at a time (the
/// first byte a word flags is exact: a false flag can only follow a true
/// one). The strings of metadata are short: a call to a vector scan
/// (`memchr2`) costs more than most of them.
fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let found = zero_byte(word ^ (ONES * u64::from(b'"')))
            | zero_byte(word ^ (ONES * u64::from(b'\\')));
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\')
        .map(|n| at + n)
}

/// What follows the JSON string (escapes and all) at the start of `bytes`.
fn skip_string(bytes: &[u8]) -> Option<&[u8]> {
    let mut rest = bytes.strip_prefix(b"\"")?;
    loop {
        let end = quote_or_backslash(rest)?;
        if rest[end] == b'"' {
            return Some(&rest[end + 1..]);
        }
        rest = rest.get(end + 2..)?;
    }
}

/// `apiVersion` from the front of the encoding (where this process writes it:
/// after `kind`, or first for a custom resource); `None` when it is not there
/// as a plain string.
pub(crate) fn read_api_version(json: &[u8]) -> Option<&str> {
    if let Some(usual) = usual_type_meta(json) {
        // Read in turn, `kind` is checked only when it comes first.
        let kind = usual.kind.filter(|_| usual.kind_first);
        return texts(json, [kind, usual.api_version])?[1];
    }
    let mut kind = None;
    for member in leading(json) {
        match member {
            Leading::Kind(k) => superseded(kind.replace(k))?,
            Leading::ApiVersion(v) => return texts(json, [kind, Some(v)])?[1],
            Leading::Other(_) | Leading::MetadataAt(_) => {}
        }
    }
    None
}

/// The head from the front of an encoding that starts with its type meta
/// and metadata (as this process writes every object): what follows
/// `metadata` (the bulk of most objects) is not even scanned.
pub(crate) fn read_head(json: &[u8]) -> Option<Head<'_>> {
    read_head_until(json, Until::ManagedFields)
}

/// [`read_head`] of this process's encoding of metadata without
/// `deletionTimestamp`, `finalizers` and `ownerReferences`
/// ([`Encoded::plain_metadata`]): nothing the head keeps comes after `uid`
/// (in `ObjectMeta`'s order and in a custom resource's sorted one), so the
/// scan stops there, before the labels, annotations and timestamps.
pub(crate) fn read_plain_head(json: &[u8]) -> Option<Head<'_>> {
    read_head_until(json, Until::Uid)
}

/// Where a scan of metadata may stop.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    /// At `managedFields` once `uid` is read (or at the end).
    ManagedFields,
    /// Right after `uid`.
    Uid,
}

fn read_head_until(json: &[u8], until: Until) -> Option<Head<'_>> {
    let type_meta = type_meta(json)?;
    // Type meta written after metadata (another writer's order) would be
    // missed: only a front with all three is read this way.
    let (kind, api_version) = (type_meta.kind?, type_meta.api_version?);
    let at = type_meta.metadata_at;
    // One value is read and the rest left unread: no end-of-input check.
    let metadata = &json[at..];
    let Some(scan) = MetaScan::scan(metadata, until) else {
        let [kind, api_version] = texts(json, [Some(kind), Some(api_version)])?;
        return Some(Head {
            kind: Cow::Borrowed(kind?),
            api_version: Cow::Borrowed(api_version?),
            metadata: HeadMeta::parse_front(metadata)?,
        });
    };
    let strings = [
        Some(kind),
        Some(api_version),
        scan.name,
        scan.namespace,
        scan.uid,
        scan.deletion_timestamp,
    ];
    let [kind, api_version, name, namespace, uid, deletion_timestamp] = texts(json, strings)?;
    Some(Head {
        kind: borrowed(kind),
        api_version: borrowed(api_version),
        metadata: scan.into_meta([name, namespace, uid, deletion_timestamp]),
    })
}

/// A string the head keeps, as found (`""` when absent).
fn borrowed(s: Option<&str>) -> Cow<'_, str> {
    Cow::Borrowed(s.unwrap_or_default())
}

/// A member of type meta read again: the one it replaces was text too (as
/// reading the members in turn, each as text, would have found).
fn superseded(replaced: Option<&[u8]>) -> Option<()> {
    replaced.map_or(Some(()), |bytes| std::str::from_utf8(bytes).ok().map(drop))
}

impl<'de> serde::Deserialize<'de> for HeadMeta<'_> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut meta = HeadMeta::default();
        d.deserialize_map(HeadMetaReader {
            meta: &mut meta,
            stop_at_managed_fields: false,
            stopped: &mut false,
        })?;
        Ok(meta)
    }
}

/// What the head keeps of metadata as this process writes it, found in
/// place: its strings as the encoding has them (no escapes; UTF-8 checked
/// by the caller, [`texts`]), only the lists the head keeps decoded and
/// everything else skipped ([`skip_value`]: the encoding is well-formed,
/// this process's or checked when stored, [`spliceable`]). Stops at
/// `managedFields` (the bulk of most metadata) when it comes after `uid`:
/// then it is last, as `ObjectMeta`'s order puts it and this process writes
/// it, with every member the head needs already read. The sorted order of
/// older encodings puts `uid` after it, and is read in full.
#[derive(Default)]
struct MetaScan<'a> {
    name: Option<&'a [u8]>,
    namespace: Option<&'a [u8]>,
    uid: Option<&'a [u8]>,
    deletion_timestamp: Option<&'a [u8]>,
    finalizers: Option<Vec<String>>,
    owner_references: Option<Vec<HeadOwner>>,
}

impl<'a> MetaScan<'a> {
    /// The head's metadata: what the scan found, its strings (name,
    /// namespace, uid, deletionTimestamp) checked as text by the caller.
    fn into_meta(
        self,
        [name, namespace, uid, deletion_timestamp]: [Option<&str>; 4],
    ) -> HeadMeta<'_> {
        HeadMeta {
            name: borrowed(name),
            namespace: borrowed(namespace),
            uid: borrowed(uid),
            deletion_timestamp: deletion_timestamp.map(Cow::Borrowed),
            finalizers: self.finalizers,
            owner_references: self.owner_references,
        }
    }

    /// The metadata object at the front of `json`; `None` for what is left to
    /// [`HeadMeta::parse_front`]: a kept string escaped, `null` or repeated,
    /// whitespace.
    fn scan(json: &'a [u8], until: Until) -> Option<MetaScan<'a>> {
        let mut meta = MetaScan::default();
        let mut rest = json.strip_prefix(b"{")?;
        if rest.first() == Some(&b'}') {
            return Some(meta);
        }
        loop {
            let (key, _, after_key) = key_at(rest)?;
            let value = after_key.strip_prefix(b":")?;
            let keep = |slot: &mut Option<&'a [u8]>| -> Option<&'a [u8]> {
                let (s, after) = plain_bytes(value)?;
                slot.replace(s).is_none().then_some(after)
            };
            rest = match key {
                Key::ManagedFields if meta.uid.is_some() => return Some(meta),
                Key::Name => keep(&mut meta.name)?,
                Key::Namespace => keep(&mut meta.namespace)?,
                Key::Uid if until == Until::Uid => {
                    keep(&mut meta.uid)?;
                    return Some(meta);
                }
                Key::Uid => keep(&mut meta.uid)?,
                Key::DeletionTimestamp => keep(&mut meta.deletion_timestamp)?,
                Key::Finalizers => {
                    let (list, after) = json_value_at(value)?;
                    meta.finalizers = Some(list);
                    after
                }
                Key::OwnerReferences => {
                    let (list, after) = json_value_at(value)?;
                    meta.owner_references = Some(list);
                    after
                }
                Key::Labels | Key::Annotations => skip_string_map(value)?,
                // Timestamps; in a custom resource's sorted metadata
                // managedFields too, before `uid`.
                _ if value.first() == Some(&b'"') => skip_string(value)?,
                _ => skip_value(value)?,
            };
            match rest.split_first()? {
                (b',', after) => rest = after,
                (b'}', _) => return Some(meta),
                _ => return None,
            }
        }
    }
}

impl HeadMeta<'static> {
    /// What [`MetaScan`] reads of the metadata at the front of `json`, by
    /// serde: for any member order, escapes and `null`s (stopping at
    /// `managedFields` after `uid` as the scan does).
    fn parse_front(json: &[u8]) -> Option<HeadMeta<'static>> {
        use serde::Deserializer;
        let mut meta = HeadMeta::default();
        let mut stopped = false;
        let read = serde_json::Deserializer::from_slice(json).deserialize_map(HeadMetaReader {
            meta: &mut meta,
            stop_at_managed_fields: true,
            stopped: &mut stopped,
        });
        // Stopping leaves the map unfinished, which serde_json reports.
        (read.is_ok() || stopped).then_some(meta)
    }
}

#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum HeadMetaKey {
    Name,
    Namespace,
    Uid,
    DeletionTimestamp,
    Finalizers,
    OwnerReferences,
    ManagedFields,
    #[serde(other)]
    Other,
}

struct HeadMetaReader<'a> {
    meta: &'a mut HeadMeta<'static>,
    stop_at_managed_fields: bool,
    stopped: &'a mut bool,
}

impl<'de> serde::de::Visitor<'de> for HeadMetaReader<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::IgnoredAny;
        let mut uid_read = false;
        while let Some(key) = map.next_key()? {
            let meta = &mut *self.meta;
            match key {
                HeadMetaKey::Name => meta.name = map.next_value()?,
                HeadMetaKey::Namespace => meta.namespace = map.next_value()?,
                HeadMetaKey::Uid => {
                    meta.uid = map.next_value()?;
                    uid_read = true;
                }
                HeadMetaKey::DeletionTimestamp => meta.deletion_timestamp = map.next_value()?,
                HeadMetaKey::Finalizers => meta.finalizers = map.next_value()?,
                HeadMetaKey::OwnerReferences => meta.owner_references = map.next_value()?,
                HeadMetaKey::ManagedFields if self.stop_at_managed_fields && uid_read => {
                    *self.stopped = true;
                    return Ok(());
                }
                HeadMetaKey::ManagedFields | HeadMetaKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// One of the members this process writes first in every encoding
/// (`{"kind":…,"apiVersion":…,"metadata":…` for built-in kinds,
/// `{"apiVersion":…,"kind":…,"metadata":…` for custom resources, either of
/// type meta's two may be missing).
enum Leading<'a> {
    /// Its value's bytes (UTF-8 unchecked: the caller's [`texts`]).
    Kind(&'a [u8]),
    ApiVersion(&'a [u8]),
    /// Where metadata's value starts.
    MetadataAt(usize),
    /// Another member before metadata, skipped (its key).
    Other(&'a [u8]),
}

impl<'a> Leading<'a> {
    fn key(&self) -> &'a [u8] {
        match self {
            Leading::Kind(_) => b"kind",
            Leading::ApiVersion(_) => b"apiVersion",
            Leading::MetadataAt(_) => b"metadata",
            Leading::Other(key) => key,
        }
    }
}

/// The leading members of `json`, in order, as far as they are there as
/// plain strings, up to `metadata`; other members before it (a custom
/// resource's that sort before `metadata`, such as `data`) are skipped.
/// Nothing after metadata's start is read, and a caller stops reading once
/// it has what it wants.
fn leading(json: &[u8]) -> impl Iterator<Item = Leading<'_>> {
    let mut rest = json.strip_prefix(b"{");
    std::iter::from_fn(move || {
        let (key, text, after_key) = key_at(rest.take()?)?;
        let value_at = after_key.strip_prefix(b":")?;
        let (member, after_value) = match key {
            Key::Metadata => return Some(Leading::MetadataAt(json.len() - value_at.len())),
            Key::Kind => {
                let (value, after_value) = plain_bytes(value_at)?;
                (Leading::Kind(value), after_value)
            }
            Key::ApiVersion => {
                let (value, after_value) = plain_bytes(value_at)?;
                (Leading::ApiVersion(value), after_value)
            }
            _ => (Leading::Other(text), skip_value(value_at)?),
        };
        rest = after_value.strip_prefix(b",");
        Some(member)
    })
}

/// The JSON value at the start of `bytes` decoded as `T`, and what follows it.
fn json_value_at<'de, T: serde::Deserialize<'de>>(bytes: &'de [u8]) -> Option<(T, &'de [u8])> {
    let mut values = serde_json::Deserializer::from_slice(bytes).into_iter::<T>();
    let value = values.next()?.ok()?;
    Some((value, &bytes[values.byte_offset()..]))
}

/// The bytes of a JSON string without escapes at the start of `bytes`
/// (UTF-8 unchecked: keys are only compared, values checked by [`texts`]),
/// and what follows it.
fn plain_bytes(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let body = bytes.strip_prefix(b"\"")?;
    let end = quote_or_backslash(body)?;
    (body[end] == b'"').then(|| (&body[..end], &body[end + 1..]))
}

/// The keys of type meta and metadata, and any other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Kind,
    ApiVersion,
    Metadata,
    Name,
    GenerateName,
    Namespace,
    SelfLink,
    Uid,
    ResourceVersion,
    Generation,
    CreationTimestamp,
    DeletionTimestamp,
    Labels,
    Annotations,
    OwnerReferences,
    Finalizers,
    ManagedFields,
    Other,
}

impl Key {
    fn of(text: &[u8]) -> Key {
        match text {
            b"kind" => Key::Kind,
            b"apiVersion" => Key::ApiVersion,
            b"metadata" => Key::Metadata,
            b"name" => Key::Name,
            b"generateName" => Key::GenerateName,
            b"namespace" => Key::Namespace,
            b"selfLink" => Key::SelfLink,
            b"uid" => Key::Uid,
            b"resourceVersion" => Key::ResourceVersion,
            b"generation" => Key::Generation,
            b"creationTimestamp" => Key::CreationTimestamp,
            b"deletionTimestamp" => Key::DeletionTimestamp,
            b"labels" => Key::Labels,
            b"annotations" => Key::Annotations,
            b"ownerReferences" => Key::OwnerReferences,
            b"finalizers" => Key::Finalizers,
            b"managedFields" => Key::ManagedFields,
            _ => Key::Other,
        }
    }

    /// The members `ObjectMeta`'s order writes before `resourceVersion`.
    fn before_version(self) -> bool {
        matches!(
            self,
            Key::Name | Key::GenerateName | Key::Namespace | Key::SelfLink | Key::Uid
        )
    }
}

/// The key at the front of `bytes` as [`plain_bytes`] reads it (its text and
/// what follows it), and which it is: the keys of type meta and metadata are
/// told by comparing a few bytes with each that starts as it does (a word at
/// a time), other keys searched for their end.
#[inline(always)]
fn key_at(bytes: &[u8]) -> Option<(Key, &[u8], &[u8])> {
    macro_rules! known {
        ($($text:literal => $key:expr),+) => {{
            $(if let Some(rest) = strip(bytes, $text) {
                return Some(($key, &$text[1..$text.len() - 1], rest));
            })+
        }};
    }
    match bytes.get(1) {
        Some(b'n') => known!(br#""name""# => Key::Name, br#""namespace""# => Key::Namespace),
        Some(b'u') => known!(br#""uid""# => Key::Uid),
        Some(b'r') => known!(br#""resourceVersion""# => Key::ResourceVersion),
        Some(b'c') => known!(br#""creationTimestamp""# => Key::CreationTimestamp),
        Some(b'l') => known!(br#""labels""# => Key::Labels),
        Some(b'a') => known!(
            br#""annotations""# => Key::Annotations,
            br#""apiVersion""# => Key::ApiVersion
        ),
        Some(b'm') => known!(
            br#""managedFields""# => Key::ManagedFields,
            br#""metadata""# => Key::Metadata
        ),
        Some(b'o') => known!(br#""ownerReferences""# => Key::OwnerReferences),
        Some(b'f') => known!(br#""finalizers""# => Key::Finalizers),
        Some(b'd') => known!(br#""deletionTimestamp""# => Key::DeletionTimestamp),
        Some(b'g') => known!(
            br#""generation""# => Key::Generation,
            br#""generateName""# => Key::GenerateName
        ),
        Some(b'k') => known!(br#""kind""# => Key::Kind),
        _ => {}
    }
    let (text, rest) = plain_bytes(bytes)?;
    Some((Key::of(text), text, rest))
}

/// `bytes` past `prefix`, compared a word at a time (its length is known).
fn strip<'a, const N: usize>(bytes: &'a [u8], prefix: &[u8; N]) -> Option<&'a [u8]> {
    let (head, rest) = bytes.split_first_chunk::<N>()?;
    (head == prefix).then_some(rest)
}

/// `strings` (each a slice of `json`: a string's bytes between its quotes,
/// found by a scan; `None`: absent) as text, or `None` if one of them is not
/// UTF-8. A check's call costs about as much as checking a hundred bytes, and
/// the strings of an encoding's front are a few short ones close together
/// (type meta, name, namespace, uid): when they are in order and near each
/// other they are checked at once, with the keys and punctuation between
/// them. Where that finds something that is not UTF-8 each string is
/// checked alone, so the answer is each string's own.
fn texts<'a, const N: usize>(
    json: &'a [u8],
    strings: [Option<&'a [u8]>; N],
) -> Option<[Option<&'a str>; N]> {
    /// At most this many bytes checked at once.
    const RUN: usize = 512;
    let mut texts = [None; N];
    let base = json.as_ptr().addr();
    let offset = |s: &[u8]| s.as_ptr().addr().wrapping_sub(base);
    let mut present = strings.iter().flatten();
    let (Some(first), last) = (present.next(), present.next_back()) else {
        return Some(texts);
    };
    let (start, last) = (offset(first), last.unwrap_or(first));
    let end = offset(last).wrapping_add(last.len());
    let run = (start <= end && end <= json.len() && end - start <= RUN)
        .then(|| apimachinery::json::text(&json[start..end]).ok())
        .flatten();
    for (text, s) in texts.iter_mut().zip(strings) {
        let Some(s) = s else { continue };
        // Cut from the run: where it is UTF-8, a string in it is iff its
        // ends are character boundaries. One out of it (another order, or
        // not a slice of `json`) or in a run that is not, checked alone.
        let at = offset(s).wrapping_sub(start);
        let cut = run.and_then(|run| run.get(at..at.wrapping_add(s.len())));
        *text = Some(match cut {
            Some(cut) => cut,
            None => std::str::from_utf8(s).ok()?,
        });
    }
    Some(texts)
}

/// Whether stored bytes are well-formed JSON without a `resourceVersion` key
/// anywhere (inside a JSON string the quotes would be escaped), so splicing one
/// in cannot duplicate a key. Checked without building anything.
pub(crate) fn spliceable(value: &[u8]) -> bool {
    // Built once: building a searcher costs more than a search of most objects.
    static VERSION_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"resourceVersion\":"));
    VERSION_KEY.find(value).is_none()
        && serde_json::from_slice::<serde::de::IgnoredAny>(value).is_ok()
}

/// The bytes stored for an object: everything but `resourceVersion`
/// (the revision is the version; storing it would make every value stale).
/// Serialized without copying the object, `kind`, `apiVersion` and `metadata`
/// first so that [`Object::from_stored`] can splice the version back in.
pub fn encode_for_storage(obj: &Value) -> Bytes {
    kept_encoding(obj, json::MetadataMembers::WithoutResourceVersion)
}

/// A stored encoding, with where its revision goes when the encoder said.
#[derive(Clone, Debug)]
pub struct Encoded {
    pub bytes: Bytes,
    slot: Option<VersionSlot>,
    /// Written from metadata without `deletionTimestamp`, `finalizers` and
    /// `ownerReferences` ([`read_plain_head`]).
    plain_metadata: bool,
}

impl Encoded {
    /// Bytes whose revision slot a splice finds by scanning.
    pub fn unplaced(bytes: Bytes) -> Encoded {
        Encoded {
            bytes,
            slot: None,
            plain_metadata: false,
        }
    }

    /// Whether the encoder wrote metadata without `deletionTimestamp`,
    /// `finalizers` and `ownerReferences`.
    pub(crate) fn plain_metadata(&self) -> bool {
        self.plain_metadata
    }

    /// The bytes with `"resourceVersion":"<revision>"` in their metadata:
    /// put where the encoder said, else where a scan finds
    /// ([`splice_own_revision`]; equal, a property test holds).
    pub(crate) fn spliced(&self, revision: i64) -> Option<Bytes> {
        match self.slot {
            Some(slot) => Some(splice_at(&self.bytes, slot, revision)),
            None => splice_own_revision(&self.bytes, revision),
        }
    }
}

/// [`encode_for_storage`] of a typed object (its metadata written from the
/// typed fields: [`json::encode_dynamic_into`]), with where its revision goes.
pub fn encode_typed_for_storage(obj: &apimachinery::DynamicObject) -> Encoded {
    let (bytes, slot) = kept_bytes(|out| {
        json::encode_dynamic_into(out, obj, json::MetadataMembers::WithoutResourceVersion)
    });
    let meta = &obj.metadata;
    Encoded {
        bytes,
        slot,
        plain_metadata: meta.deletion_timestamp.is_none()
            && meta.finalizers.is_empty()
            && meta.owner_references.is_empty(),
    }
}

/// `obj`'s encoding in bytes kept as long as the object is cached: exactly its
/// size. It is written into a warm buffer of this thread's and copied out
/// once, not grown by doubling (three reallocations for a 1.5 KiB object)
/// and then shrunk.
pub(crate) fn kept_encoding(obj: &Value, metadata: json::MetadataMembers) -> Bytes {
    kept_bytes(|out| json::encode_object_into(out, obj, metadata)).0
}

/// What `write` writes, in bytes kept as [`kept_encoding`] keeps them, and
/// what it says.
fn kept_bytes<R>(write: impl FnOnce(&mut Vec<u8>) -> R) -> (Bytes, R) {
    /// Larger buffers are not kept for the next object.
    const KEPT_SCRATCH: usize = 256 * 1024;
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with_borrow_mut(|scratch| {
        scratch.clear();
        let said = write(scratch);
        let mut kept = tls_copy_buffer(scratch.len());
        kept.put_slice(scratch);
        let kept = kept.freeze();
        if scratch.capacity() > KEPT_SCRATCH {
            *scratch = Vec::new();
        }
        (kept, said)
    })
}

/// An empty buffer of `capacity` for bytes that rustls will copy into a TLS
/// record, starting 32 bytes past a 64-byte boundary.
///
/// Why: glibc's memcpy copies several KiB with `rep movsb`, which on AMD Zen runs
/// about twenty times slower when the destination is 1 to 31 bytes ahead of the
/// source modulo 4 KiB (2.1 against 43 GB/s for 16 KiB, measured on the project's
/// machine). rustls' record buffers start on 64-byte (mostly page) boundaries and
/// the plaintext goes in a few bytes after (the record header, hyper's chunk-size
/// line), while a large buffer of ours would also start on a page boundary: the
/// slow case, for a quarter of a LIST-all's server CPU. From 32 past a boundary a
/// destination within the first 31 bytes of one is behind the source instead.
/// Cached objects' encodings are made so too: watch events send them as they are.
pub fn tls_copy_buffer(capacity: usize) -> BytesMut {
    const LINE: usize = 64;
    // glibc copies less than ~2 KiB (`x86_rep_movsb_threshold`) without `rep movsb`.
    const SMALL: usize = 2048;
    if capacity < SMALL {
        return BytesMut::with_capacity(capacity);
    }
    let mut buf = BytesMut::with_capacity(capacity + LINE);
    let skip = (LINE + LINE / 2 - buf.as_ptr() as usize % LINE) % LINE;
    buf.put_bytes(0, skip);
    bytes::Buf::advance(&mut buf, skip);
    buf
}

/// Where the members of `metadata` begin in an encoding as
/// [`encode_for_storage`] writes it, and whether they are a custom
/// resource's (sorted) rather than in `ObjectMeta`'s order, told by the
/// `apiVersion` ([`json::is_unstructured_api_version`]). `None` also when
/// type meta's order is not the one this process writes for that
/// `apiVersion` (`kind` first for a built-in kind, `apiVersion` first for a
/// custom resource): bytes another writer, or an older kubext, ordered
/// otherwise are decoded instead. Type meta's strings are not yet checked as
/// text: the caller checks them ([`texts`]), with whatever else it reads.
struct Front<'a> {
    kind: Option<&'a [u8]>,
    api_version: Option<&'a [u8]>,
    /// Where metadata's members begin.
    members: usize,
    /// A custom resource's: its members sorted.
    sorted: bool,
}

/// [`front`] with type meta's strings checked as text.
fn checked_front(json: &[u8]) -> Option<Front<'_>> {
    let front = front(json)?;
    texts(json, [front.kind, front.api_version])?;
    Some(front)
}

fn front(json: &[u8]) -> Option<Front<'_>> {
    let type_meta = type_meta(json)?;
    // `is_unstructured_api_version` of text (none without a group).
    let sorted = match type_meta.api_version {
        Some(v) if v.contains(&b'/') => {
            json::is_unstructured_api_version(std::str::from_utf8(v).ok()?)
        }
        _ => false,
    };
    let kind_after_api_version =
        type_meta.kind.is_some() && type_meta.api_version.is_some() && !type_meta.kind_first;
    let in_order = if sorted {
        type_meta.ascending
    } else {
        !type_meta.other && !kind_after_api_version
    };
    let at = type_meta.metadata_at;
    (in_order && json.get(at) == Some(&b'{')).then_some(Front {
        kind: type_meta.kind,
        api_version: type_meta.api_version,
        members: at + 1,
        sorted,
    })
}

/// The members before metadata, as [`leading`] reads them (strings not yet
/// checked as text).
#[derive(Debug, PartialEq)]
struct TypeMeta<'a> {
    kind: Option<&'a [u8]>,
    api_version: Option<&'a [u8]>,
    /// Where metadata's value starts.
    metadata_at: usize,
    /// Whether `kind` came before `apiVersion`.
    kind_first: bool,
    /// Whether the members' keys ascend.
    ascending: bool,
    /// Whether a member other than type meta's came before metadata.
    other: bool,
}

fn type_meta(json: &[u8]) -> Option<TypeMeta<'_>> {
    usual_type_meta(json).or_else(|| leading_type_meta(json))
}

/// [`type_meta`] read member by member.
fn leading_type_meta(json: &[u8]) -> Option<TypeMeta<'_>> {
    let mut type_meta = TypeMeta {
        kind: None,
        api_version: None,
        metadata_at: 0,
        kind_first: false,
        ascending: true,
        other: false,
    };
    // Members before metadata but type meta's are a custom resource's, and
    // all of them sorted (the encoding's order, which the splice keeps).
    let mut previous = &b""[..];
    let mut at = None;
    for member in leading(json) {
        type_meta.ascending &= previous < member.key();
        previous = member.key();
        match member {
            Leading::Kind(k) => {
                superseded(type_meta.kind.replace(k))?;
                type_meta.kind_first = type_meta.api_version.is_none();
            }
            Leading::ApiVersion(v) => superseded(type_meta.api_version.replace(v))?,
            Leading::Other(_) => type_meta.other = true,
            Leading::MetadataAt(m) => at = Some(m),
        }
    }
    type_meta.metadata_at = at?;
    Some(type_meta)
}

/// [`type_meta`] of the fronts this process writes, `{"kind":…,"apiVersion":…,"metadata":`
/// (a built-in kind's) and `{"apiVersion":…,"kind":…,"metadata":` (a custom
/// resource's when no member sorts before metadata), read at once; `None`
/// for any other (then read member by member, to the same effect).
fn usual_type_meta(json: &[u8]) -> Option<TypeMeta<'_>> {
    if let Some(rest) = strip(json, br#"{"kind":"#) {
        let (kind, rest) = plain_bytes(rest)?;
        let (api_version, rest) = plain_bytes(strip(rest, br#","apiVersion":"#)?)?;
        let rest = strip(rest, br#","metadata":"#)?;
        return Some(TypeMeta {
            kind: Some(kind),
            api_version: Some(api_version),
            metadata_at: json.len() - rest.len(),
            kind_first: true,
            ascending: false,
            other: false,
        });
    }
    let (api_version, rest) = plain_bytes(strip(json, br#"{"apiVersion":"#)?)?;
    let (kind, rest) = plain_bytes(strip(rest, br#","kind":"#)?)?;
    let rest = strip(rest, br#","metadata":"#)?;
    Some(TypeMeta {
        kind: Some(kind),
        api_version: Some(api_version),
        metadata_at: json.len() - rest.len(),
        kind_first: false,
        ascending: true,
        other: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::meta;
    use proptest::prelude::*;

    #[test]
    fn tls_copy_buffers_start_32_bytes_past_a_cache_line_with_the_capacity_asked_for() {
        for capacity in [2048, 4096, 80 * 1024] {
            let buf = tls_copy_buffer(capacity);
            assert_eq!(buf.as_ptr() as usize % 64, 32, "{capacity}");
            assert!(buf.capacity() >= capacity);
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn the_scanned_head_is_the_parsed_head_or_none() {
        // This process's encodings are scanned; whatever the scan cannot
        // take as it is (escapes, nulls, whitespace) is left to serde, and
        // what it does take must be what serde reads.
        let ours = [
            serde_json::json!({"kind": "Pod", "apiVersion": "v1", "metadata": {
                "name": "p", "namespace": "ns", "uid": "u1", "generation": 3,
                "labels": {"a": "b", "c": "{\"}"}, "annotations": {},
                "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["x", "y"],
                "ownerReferences": [{"uid": "u0", "blockOwnerDeletion": false, "kind": "K"}],
                "managedFields": [{"manager": "m"}], "zz": [1, {"b": null}]}}),
            serde_json::json!({"kind": "Namespace", "apiVersion": "v1", "metadata": {}}),
            serde_json::json!({"kind": "X", "apiVersion": "v1", "metadata": {"name": "no-uid", "labels": {"a": "b"}}}),
            serde_json::json!({"kind": "Widget", "apiVersion": "example.com/v1", "data": {"a": "}"},
                "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "generation": 2,
                "annotations": {"uid": "x"}, "finalizers": ["f"],
                "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"k:{\"uid\":\"u\"}": {}}}}],
                "ownerReferences": [{"uid": "u0", "blockOwnerDeletion": true}]}}),
        ];
        for value in ours {
            let json = kept_encoding(&value, json::MetadataMembers::All);
            let at = checked_front(&json).unwrap().members - 1;
            let scanned = scan_front(&json[at..]);
            assert!(scanned.is_some(), "{}", String::from_utf8_lossy(&json));
            assert_eq!(scanned, HeadMeta::parse_front(&json[at..]));
            assert_eq!(read_head(&json).unwrap(), Head::of(&value));
        }
        for foreign in [
            &br#"{"name":"p\u0041","uid":"u"}"#[..],
            br#"{"generateName":"p\u0041","uid":"u","labels":{"a\"":"\\"}}"#,
            br#"{"name":"p", "uid":"u"}"#,
            br#"{"name":"p","deletionTimestamp":null,"uid":"u"}"#,
            br#"{"finalizers":null,"uid":"u"}"#,
            br#"{"uid":"u","name":"p","name":"q"}"#,
            br#"{"uid":"u""#,
            br#"{}"#,
        ] {
            if let Some(scanned) = scan_front(foreign) {
                assert_eq!(
                    Some(scanned),
                    HeadMeta::parse_front(foreign),
                    "{}",
                    String::from_utf8_lossy(foreign)
                );
            }
        }
        assert_eq!(scan_front(br#"{"uid":"u""#), None);
        // A string the head keeps, repeated: left to serde (the last wins).
        assert_eq!(scan_front(br#"{"uid":"u","name":"p","name":"q"}"#), None);
        // What the head skips is skipped, not checked: the encoding is
        // well-formed (this process's, or checked when stored).
        assert!(!spliceable(br#"{"uid":"u","labels":{"a":}}"#));
    }

    /// [`MetaScan`] and the check of its strings, as [`read_head`] does them.
    fn scan_front(json: &[u8]) -> Option<HeadMeta<'_>> {
        let scan = MetaScan::scan(json, Until::ManagedFields)?;
        let [name, namespace, uid, deletion_timestamp] = texts(
            json,
            [scan.name, scan.namespace, scan.uid, scan.deletion_timestamp],
        )?;
        Some(scan.into_meta([name, namespace, uid, deletion_timestamp]))
    }

    /// A custom resource's metadata is sorted: its revision goes after every
    /// member before `resourceVersion` (past `uid`s and `name`s nested in
    /// labels, managedFields and ownerReferences) and before `uid`.
    #[test]
    fn a_custom_resources_revision_goes_before_its_uid() {
        let widget = serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "data": {"uid": "d", "z": [{"name": "]}"}]},
            "metadata": {"name": "w", "namespace": "ns", "uid": "u1", "generation": 2,
                "labels": {"name": "l", "uid": "l"}, "finalizers": ["f"],
                "managedFields": [{"manager": "m", "fieldsV1": {"f:metadata": {"k:{\"uid\":\"u0\"}": {}}}}],
                "ownerReferences": [{"name": "o", "uid": "u0"}]},
            "spec": {"uid": "s"}});
        let stored = encode_for_storage(&widget);
        let spliced = splice_revision(&stored, 7).unwrap();
        let text = std::str::from_utf8(&spliced).unwrap();
        assert!(text.starts_with(r#"{"apiVersion":"example.com/v1","data":{"uid":"d","z":[{"name":"]}"}]},"kind":"Widget","metadata":{"finalizers":["f"],"generation":2,"labels":{"name":"l","uid":"l"},"managedFields":"#), "{text}");
        assert!(text.contains(r#""namespace":"ns","ownerReferences":[{"name":"o","uid":"u0"}],"resourceVersion":"7","uid":"u1"},"spec":{"uid":"s"}}"#), "{text}");
        assert_eq!(read_revision(&spliced), Some(7));
        assert_eq!(read_name_and_namespace(&spliced), Some(("w", "ns")));
        assert_eq!(read_api_version(&spliced), Some("example.com/v1"));
        assert_eq!(
            read_head(&spliced).unwrap(),
            Head::of(&at_revision(&widget, 7))
        );
        // Written as an older kubext wrote it (type meta and metadata in
        // ObjectMeta's order), it is decoded and encoded anew instead.
        let older = br#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","uid":"u1"},"spec":{}}"#;
        assert!(splice_revision(older, 7).is_none());
        assert_eq!(read_revision(older), None);
        assert_eq!(read_name_and_namespace(older), None);
    }

    /// A string that is not UTF-8 is never taken as text: the scans answer
    /// `None` (the caller decodes, and serde rejects it) when one they keep
    /// is not, and what they skip is not checked, as before they checked
    /// each string on its own.
    #[test]
    fn strings_not_utf8_are_not_read_as_text() {
        let pod = serde_json::json!({"kind": "Pod", "apiVersion": "v1", "metadata": {
            "name": "pod-name", "namespace": "the-ns", "uid": "the-uid",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionTimestamp": "2026-01-02T00:00:00Z",
            "labels": {"app": "label-value"}, "finalizers": ["f"]}, "spec": {}});
        let clean = encode_for_storage(&pod);
        let head = read_head(&clean).unwrap();
        // Each string, which scans keep it (head, name and namespace, type meta).
        for (text, in_head, in_names, in_type_meta) in [
            ("Pod", true, true, true),
            ("v1", true, true, true),
            ("pod-name", true, true, false),
            ("the-ns", true, true, false),
            ("the-uid", true, false, false),
            ("2026-01-02", true, false, false),
            ("2026-01-01", false, false, false),
            ("label-value", false, false, false),
        ] {
            let at = memchr::memmem::find(&clean, text.as_bytes()).unwrap();
            let mut bad = clean.to_vec();
            bad[at + 1] = 0xff;
            let bad = bad.as_slice();
            let read = read_head(bad);
            if in_head {
                assert_eq!(read, None, "{text}");
            } else {
                assert_eq!(read.as_ref(), Some(&head), "{text}");
            }
            assert_eq!(read_name_and_namespace(bad).is_none(), in_names, "{text}");
            assert_eq!(checked_front(bad).is_none(), in_type_meta, "{text}");
            assert_eq!(splice_revision(bad, 3).is_none(), in_type_meta, "{text}");
        }
    }

    proptest! {
        /// Known keys told by their bytes read as any key is read: as
        /// plain strings, whatever follows them.
        #[test]
        fn keys_are_read_as_plain_strings(
            key in prop_oneof![
                Just("name"), Just("namespace"), Just("uid"), Just("resourceVersion"),
                Just("creationTimestamp"), Just("labels"), Just("annotations"),
                Just("apiVersion"), Just("managedFields"), Just("metadata"),
                Just("ownerReferences"), Just("finalizers"), Just("deletionTimestamp"),
                Just("generation"), Just("generateName"), Just("kind"), Just(""),
                Just("selfLink"), Just("names"), Just("kin"), Just("f:name"),
            ],
            cut in 0usize..24,
            tail in r#"["\\a-z:{}]{0,4}"#,
        ) {
            let mut bytes = format!("\"{key}").into_bytes();
            bytes.truncate(cut.max(1).min(bytes.len()));
            bytes.extend_from_slice(tail.as_bytes());
            let read = |bytes: &[u8]| key_at(bytes).map(|(key, text, rest)| {
                assert_eq!(key, Key::of(text));
                (text.to_vec(), rest.to_vec())
            });
            let plain = |bytes: &[u8]| plain_bytes(bytes).map(|(text, rest)| (text.to_vec(), rest.to_vec()));
            prop_assert_eq!(read(&bytes), plain(&bytes), "{}", String::from_utf8_lossy(&bytes));
            let whole = format!("\"{key}\"{tail}");
            prop_assert_eq!(read(whole.as_bytes()), plain(whole.as_bytes()));
        }
    }

    /// Bytes mostly ASCII, some not UTF-8; the strings in them by position.
    fn texts_input() -> impl Strategy<Value = (Vec<u8>, [Option<(usize, usize)>; 6])> {
        let byte = prop_oneof![8 => 0x20u8..0x7f, 1 => any::<u8>()];
        let string = proptest::option::of((0usize..400, 0usize..48));
        (
            proptest::collection::vec(byte, 0..400),
            [
                string.clone(),
                string.clone(),
                string.clone(),
                string.clone(),
                string.clone(),
                string,
            ],
        )
    }

    proptest! {
        /// Checking nearby strings together answers as checking each alone:
        /// the strings as text, or `None` if one is not UTF-8.
        #[test]
        fn texts_are_each_strings_own_check((bytes, strings) in texts_input(), foreign in any::<bool>()) {
            let other = b"elsewhere".to_vec();
            let strings = strings.map(|s| {
                s.map(|(at, len)| {
                    let at = at.min(bytes.len());
                    &bytes[at..(at + len).min(bytes.len())]
                })
            });
            // A string from another buffer is checked alone.
            let mut strings = strings;
            if foreign {
                strings[2] = Some(&other);
            }
            let alone: Option<Vec<Option<&str>>> = strings
                .iter()
                .map(|s| match s {
                    Some(s) => std::str::from_utf8(s).ok().map(Some),
                    None => Some(None),
                })
                .collect();
            prop_assert_eq!(texts(&bytes, strings).map(Vec::from), alone);
        }
    }

    /// The word-at-a-time search finds what a byte-at-a-time one finds, at
    /// every length and offset.
    #[test]
    fn quote_or_backslash_finds_the_first_of_either() {
        let filler = "aé\u{7f}\u{80}!#[]{}";
        for len in 0..40 {
            for at in 0..=len {
                for stop in ["\"", "\\"] {
                    let mut text: Vec<u8> = filler.bytes().cycle().take(len).collect();
                    if at < len {
                        text[at] = stop.as_bytes()[0];
                        // A byte just above the stop's that the borrow may flag.
                        if at + 1 < len {
                            text[at + 1] = stop.as_bytes()[0] + 1;
                        }
                    }
                    let naive = text.iter().position(|&b| b == b'"' || b == b'\\');
                    assert_eq!(quote_or_backslash(&text), naive, "{len} {at} {stop}");
                }
            }
        }
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            text().prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(text(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Skipping a value lands where serde's reading of it ends (labels'
        /// and annotations' maps of strings, skipped string by string, too).
        #[test]
        fn skip_value_ends_where_the_value_does(value in prop_oneof![
            json_value(),
            proptest::collection::btree_map(text(), text(), 0..4).prop_map(|m| serde_json::json!(m)),
        ]) {
            let mut written = Vec::new();
            json::write_value(&mut written, &value);
            let end = written.len();
            written.extend_from_slice(b",\"next\":1}");
            let rest = skip_value(&written).unwrap();
            prop_assert_eq!(written.len() - rest.len(), end, "{}", String::from_utf8_lossy(&written));
            if value.is_object() {
                prop_assert_eq!(skip_string_map(&written).map(<[u8]>::len), Some(rest.len()));
            }
        }
    }

    /// Strings as clients send them: mostly plain, some with what JSON
    /// escapes (quotes, backslashes, control characters) or multi-byte text,
    /// some spelling this encoding's own markers.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[a-z0-9.-]{0,12}",
            1 => "[a-z\"\\\u{1}\u{7f}é€😀 ]{0,8}",
            1 => Just("\"resourceVersion\":\"1\"".to_string()),
            1 => Just("\"metadata\":{".to_string()),
        ]
    }

    /// Built-in kinds' API versions and custom resources' (written sorted).
    fn api_version() -> impl Strategy<Value = String> {
        prop_oneof![
            2 => text(),
            1 => Just("apps/v1".to_string()),
            3 => "[a-z]{1,6}\\.example/v[0-9]",
        ]
    }

    fn owner() -> impl Strategy<Value = Value> {
        (text(), proptest::option::of(any::<bool>()), text()).prop_map(|(uid, block, kind)| {
            let mut owner =
                serde_json::json!({"apiVersion": "v1", "kind": kind, "name": "o", "uid": uid});
            if let Some(block) = block {
                owner["blockOwnerDeletion"] = block.into();
            }
            owner
        })
    }

    /// Objects as the store writes them: type meta, metadata with what the
    /// head reads (and what it skips), a body; no `resourceVersion`.
    fn object() -> impl Strategy<Value = Value> {
        let metadata = (
            text(),
            proptest::option::of(text()),
            proptest::option::of(text()),
            proptest::collection::btree_map("[a-z]{1,4}", text(), 0..3),
            proptest::option::of(proptest::collection::vec(text(), 0..3)),
            proptest::option::of(proptest::collection::vec(owner(), 0..3)),
            proptest::option::of(Just("2026-11-28T00:00:00Z")),
            any::<bool>(),
            proptest::option::of(0..i64::MAX),
        );
        let body = proptest::collection::btree_map(text(), text(), 0..4);
        (text(), api_version(), metadata, body).prop_map(
            |(kind, api_version, (name, namespace, uid, labels, finalizers, owners, deleted, managed, generation), body)| {
                let mut md = serde_json::Map::new();
                md.insert("name".into(), name.into());
                if let Some(generation) = generation {
                    md.insert("generation".into(), generation.into());
                }
                if let Some(ns) = namespace {
                    md.insert("namespace".into(), ns.into());
                }
                if let Some(uid) = uid {
                    md.insert("uid".into(), uid.into());
                }
                if !labels.is_empty() {
                    md.insert("labels".into(), serde_json::json!(labels));
                }
                if let Some(f) = finalizers {
                    md.insert("finalizers".into(), serde_json::json!(f));
                }
                if let Some(o) = owners {
                    md.insert("ownerReferences".into(), Value::Array(o));
                }
                if let Some(d) = deleted {
                    md.insert("deletionTimestamp".into(), d.into());
                }
                if managed {
                    md.insert(
                        "managedFields".into(),
                        serde_json::json!([{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]),
                    );
                }
                serde_json::json!({"kind": kind, "apiVersion": api_version, "metadata": md, "data": body})
            },
        )
    }

    /// `object` typed as the store types it (built-in kinds' metadata at
    /// `metadata.`, a custom resource's alone) and its typed encoding;
    /// `None` when its metadata does not decode.
    fn typed_encoding(object: Value) -> Option<(apimachinery::DynamicObject, Encoded)> {
        let prefix = if meta::api_version(&object).contains('.') {
            ""
        } else {
            "metadata."
        };
        let typed = apimachinery::DynamicObject::from_value(object, prefix).ok()?;
        let encoded = encode_typed_for_storage(&typed);
        Some((typed, encoded))
    }

    /// Whether Go's encoder escapes something in `s` (the front scans then
    /// leave it to serde).
    fn escaped(s: &str) -> bool {
        let mut written = Vec::new();
        json::write_str(&mut written, s);
        written != format!("\"{s}\"").as_bytes()
    }

    fn at_revision(object: &Value, revision: i64) -> Value {
        let mut object = object.clone();
        meta::set_resource_version(&mut object, revision);
        object
    }

    #[test]
    fn decimals_at_the_edges_are_what_to_string_writes() {
        for n in [0, 1, 9, 10, 99, 100, -1, -10, i64::MIN, i64::MAX] {
            let mut digits = [0u8; 20];
            assert_eq!(decimal(n, &mut digits), n.to_string().as_bytes());
        }
    }

    proptest! {
        /// Revisions are written as `to_string` writes them.
        #[test]
        fn decimals_are_what_to_string_writes(n in any::<i64>()) {
            let mut digits = [0u8; 20];
            let want = n.to_string();
            prop_assert_eq!(decimal(n, &mut digits), want.as_bytes());
        }

        /// Where the typed encoder says the revision goes is where the scan
        /// finds it, and splicing there gives the encoding at that revision.
        #[test]
        fn the_encoders_slot_is_the_scanned_slot(object in object(), revision in any::<i64>()) {
            let Some((typed, encoded)) = typed_encoding(object) else {
                return Ok(());
            };
            let Some(slot) = encoded.slot else {
                return Ok(());
            };
            // The scan finds the same slot where it reads the front at all
            // (not through escaped type meta, which the encoder still places).
            if let Some(scanned) = version_slot(&encoded.bytes) {
                prop_assert_eq!(slot, scanned);
            }
            // Spliced there, the bytes are the typed object's encoding at that revision.
            let mut at_revision = typed.clone();
            at_revision.metadata.resource_version = revision.to_string();
            let mut plain = Vec::new();
            json::encode_dynamic_into(&mut plain, &at_revision, json::MetadataMembers::All);
            let spliced = encoded.spliced(revision);
            prop_assert_eq!(spliced.as_deref(), Some(&plain[..]));
        }

        /// The encoder's word on plain metadata is true of what it wrote,
        /// and on that word the head read up to `uid` is the head read in
        /// full, which is the parsed object's.
        #[test]
        fn a_head_read_up_to_uid_on_the_encoders_word_is_the_whole_head(object in object(), revision in 1..i64::MAX) {
            let Some((_, encoded)) = typed_encoding(object) else {
                return Ok(());
            };
            let Some(spliced) = encoded.spliced(revision) else {
                return Ok(());
            };
            let parsed: Value = serde_json::from_slice(&spliced).unwrap();
            let whole = Head::of(&parsed);
            let md = &whole.metadata;
            let plain = md.deletion_timestamp.is_none()
                && md.finalizers.as_ref().is_none_or(Vec::is_empty)
                && md.owner_references.as_ref().is_none_or(Vec::is_empty);
            prop_assert_eq!(encoded.plain_metadata(), plain);
            if encoded.plain_metadata() {
                if let Some(head) = read_plain_head(&spliced) {
                    prop_assert_eq!(head, whole);
                }
                prop_assert_eq!(read_plain_head(&spliced).is_some(), read_head(&spliced).is_some());
            }
        }

        /// The splice of this process's own bytes is the checked one.
        #[test]
        fn an_own_splice_is_the_checked_splice(object in object(), revision in any::<i64>()) {
            let stored = encode_for_storage(&object);
            prop_assert_eq!(splice_own_revision(&stored, revision), splice_revision(&stored, revision));
        }

        /// Splicing the revision into the stored bytes gives exactly the
        /// bytes of encoding the object at that revision.
        #[test]
        fn a_spliced_encoding_is_the_encoding_at_that_revision(object in object(), revision in 1..i64::MAX) {
            let stored = encode_for_storage(&object);
            let Some(spliced) = splice_revision(&stored, revision) else {
                // Only type meta the front scan cannot take as it is (escaped)
                // leaves the splice to the caller's decode.
                prop_assert!(escaped(meta::kind(&object)) || escaped(meta::api_version(&object)));
                return Ok(());
            };
            let encoded = encode_served(&at_revision(&object, revision));
            prop_assert_eq!(&spliced, &encoded, "{}", String::from_utf8_lossy(&spliced));
            let parsed: Value = serde_json::from_slice(&spliced).unwrap();
            prop_assert_eq!(parsed, at_revision(&object, revision));
        }

        /// What the scans read is what serde reads from the whole object, or
        /// nothing (then the caller decodes).
        #[test]
        fn scans_read_what_the_parsed_object_holds(object in object(), revision in 1..i64::MAX) {
            let splices = splice_revision(&encode_for_storage(&object), revision).is_some();
            let object = at_revision(&object, revision);
            let encoded = encode_served(&object);
            // Read in place wherever it was spliced in place.
            let read = read_revision(&encoded);
            prop_assert_eq!(read, splices.then_some(revision));
            for name in [meta::name(&object), "other", ""] {
                prop_assert_eq!(
                    named_otherwise(&encoded, name),
                    splices
                        && !escaped(meta::name(&object))
                        && !name.is_empty()
                        && name != meta::name(&object)
                );
            }
            if let Some((name, namespace)) = read_name_and_namespace(&encoded) {
                prop_assert_eq!(name, meta::name(&object));
                prop_assert_eq!(namespace, meta::namespace(&object));
            } else {
                let escaped = escaped(meta::name(&object)) || escaped(meta::namespace(&object));
                prop_assert!(!splices || escaped);
            }
            match read_head(&encoded) {
                Some(head) => prop_assert_eq!(head, Head::of(&object)),
                None => prop_assert!(!splices),
            }
            // The usual fronts read at once as member by member.
            if let Some(usual) = usual_type_meta(&encoded) {
                prop_assert_eq!(Some(usual), leading_type_meta(&encoded));
            }
            if let Some(version) = read_api_version(&encoded) {
                prop_assert_eq!(version, meta::api_version(&object));
            }
        }

        /// Bytes in the order an older kubext wrote a custom resource
        /// (type meta and metadata as for a built-in kind), and a built-in
        /// kind's in a custom resource's order, are not spliced: the caller
        /// decodes them, and encodes them anew in today's order.
        #[test]
        fn bytes_in_the_other_order_are_left_to_the_caller(object in object(), revision in 1..i64::MAX) {
            let stored = encode_for_storage(&object);
            let sorted = json::is_unstructured_api_version(meta::api_version(&object));
            let other: Vec<u8> = if sorted {
                // `kind` first and metadata in ObjectMeta's order, as before.
                let mut typed = object.clone();
                typed["apiVersion"] = "v1".into();
                let typed = String::from_utf8(encode_for_storage(&typed).to_vec()).unwrap();
                let mut api_version = Vec::new();
                json::write_str(&mut api_version, meta::api_version(&object));
                typed.replacen(r#""apiVersion":"v1""#, std::str::from_utf8(&api_version).unwrap(), 1).into_bytes()
            } else {
                let mut sorted = Vec::new();
                json::write_value(&mut sorted, &object);
                sorted
            };
            if let Some(usual) = usual_type_meta(&other) {
                prop_assert_eq!(Some(usual), leading_type_meta(&other));
            }
            prop_assume!(other != stored.to_vec());
            prop_assert!(splice_revision(&other, revision).is_none(), "{}", String::from_utf8_lossy(&other));
        }

        /// Stored bytes splice only when no `resourceVersion` key could be
        /// duplicated; the codec's answer is the parsed object either way.
        #[test]
        fn stored_bytes_decode_to_the_object_at_their_revision(object in object(), revision in 1..i64::MAX) {
            use storage::Codec;
            let stored = encode_for_storage(&object);
            let decoded = crate::object::JsonCodec.decode("k", &stored, revision).unwrap();
            prop_assert_eq!(&*decoded.value(), &at_revision(&object, revision));
            prop_assert_eq!(decoded.revision(), Some(revision));
        }
    }
}
