//! Kubernetes' CEL libraries, against upstream's expected values.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use cel::objects::Value;
use cel::{Context, Env};

fn env() -> Env {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings).unwrap();
    kubext_cel::library::register(&mut env);
    env
}

fn eval_in(env: Env, expr: &str) -> Result<Value, String> {
    let program = env.compile(expr).map_err(|e| format!("compile: {e}"))?;
    let ctx = Context::with_env(Arc::new(env));
    program.execute(&ctx).map_err(|e| e.to_string())
}

fn eval(expr: &str) -> Result<Value, String> {
    eval_in(env(), expr)
}

/// Expected: a value, or an error containing the substring.
enum Want {
    V(Value),
    Err(&'static str),
}
use Want::{Err as E, V};

fn t() -> Want {
    V(Value::Bool(true))
}
fn f() -> Want {
    V(Value::Bool(false))
}
fn i(n: i64) -> Want {
    V(Value::Int(n))
}
fn s(x: &str) -> Want {
    V(Value::from(x))
}
fn strings(xs: &[&str]) -> Want {
    V(Value::from(
        xs.iter().map(|x| Value::from(*x)).collect::<Vec<_>>(),
    ))
}

fn run(table: &[(&str, Want)]) {
    let mut failures = Vec::new();
    for (expr, want) in table {
        let got = eval(expr);
        let ok = match (want, &got) {
            (V(w), Ok(g)) => w == g,
            (E(sub), Err(e)) => e.contains(sub),
            _ => false,
        };
        if !ok {
            let want = match want {
                V(v) => format!("{v:?}"),
                E(e) => format!("error containing {e:?}"),
            };
            failures.push(format!("{expr}: want {want}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// upstream: staging/src/k8s.io/apiserver/pkg/cel/library/lists.go (doc
/// examples) and library_test.go's list cases.
#[test]
fn lists() {
    run(&[
        ("[1, 2, 3].isSorted()", t()),
        ("['a', 'b', 'b', 'c'].isSorted()", t()),
        ("[2.0, 1.0].isSorted()", f()),
        ("[1].isSorted()", t()),
        ("[].isSorted()", t()),
        ("[duration('1s'), duration('1m')].isSorted()", t()),
        ("[1, 3].sum()", i(4)),
        ("[1.0, 3.0].sum()", V(Value::Float(4.0))),
        ("[1u, 3u].sum()", V(Value::UInt(4))),
        (
            "[duration('1m'), duration('1s')].sum() == duration('1m1s')",
            t(),
        ),
        ("[].sum()", i(0)),
        ("[1, 3].min()", i(1)),
        ("[1, 3].max()", i(3)),
        ("['b', 'a', 'c'].min()", s("a")),
        ("[].min()", E("min called on empty list")),
        ("[].max()", E("max called on empty list")),
        ("[1].min()", i(1)),
        ("([0] + []).min()", i(0)),
        ("[1, 2, 2, 3].indexOf(2)", i(1)),
        ("['a', 'b', 'b', 'c'].lastIndexOf('b')", i(2)),
        ("[1.0].indexOf(1.1)", i(-1)),
        ("[].indexOf('string')", i(-1)),
        ("[1, 2, 2, 3].lastIndexOf(2)", i(2)),
        // The strings extension's overloads still apply to strings.
        ("'abcabc'.indexOf('c')", i(2)),
        ("'abcabc'.lastIndexOf('c')", i(5)),
        ("'abcabc'.indexOf('c', 3)", i(5)),
    ]);
}

/// upstream: regex.go doc examples; kubernetes/website#46695 for findAll's
/// empty matches.
#[test]
fn regex() {
    run(&[
        ("'abc 123'.find('[0-9]+')", s("123")),
        ("'abc 123'.find('xyz')", s("")),
        ("'123 abc 456'.findAll('[0-9]+')", strings(&["123", "456"])),
        ("'123 abc 456'.findAll('[0-9]+', 1)", strings(&["123"])),
        ("'123 abc 456'.findAll('[0-9]+', 0)", strings(&[])),
        ("'123 abc 456'.findAll('xyz')", strings(&[])),
        (
            "'1, 2, 3, 4'.findAll('[0-9]+').map(x, int(x)).sum() < 100",
            t(),
        ),
        ("'1, 2'.findAll('[0-9]*')", strings(&["1", "", "2"])),
        ("'abc'.find('[')", E("Illegal regex")),
    ]);
}

/// upstream: urls.go doc examples.
#[test]
fn urls() {
    run(&[
        (
            "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
            t(),
        ),
        ("isURL('/absolute-path')", t()),
        ("isURL('https://a:b:c/')", f()),
        ("isURL('../relative-path')", f()),
        (
            "url('https://a:b:c/')",
            E("URL parse error during conversion from string"),
        ),
        ("url('../relative-path')", E("invalid URI for request")),
        ("url('/path').getScheme()", s("")),
        ("url('https://example.com/').getScheme()", s("https")),
        (
            "url('https://example.com:80/').getHost()",
            s("example.com:80"),
        ),
        ("url('https://example.com/').getHost()", s("example.com")),
        ("url('https://[::1]:80/').getHost()", s("[::1]:80")),
        ("url('https://[::1]/').getHost()", s("[::1]")),
        ("url('/path').getHost()", s("")),
        (
            "url('https://example.com:80/').getHostname()",
            s("example.com"),
        ),
        ("url('https://127.0.0.1:80/').getHostname()", s("127.0.0.1")),
        ("url('https://[::1]:80/').getHostname()", s("::1")),
        ("url('/path').getHostname()", s("")),
        ("url('https://example.com:80/').getPort()", s("80")),
        ("url('https://example.com/').getPort()", s("")),
        ("url('/path').getPort()", s("")),
        (
            "url('https://example.com/path').getEscapedPath()",
            s("/path"),
        ),
        (
            "url('https://example.com/path with spaces/').getEscapedPath()",
            s("/path%20with%20spaces/"),
        ),
        ("url('https://example.com').getEscapedPath()", s("")),
        (
            "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
            t(),
        ),
        (
            "url('https://example.com/path?key with spaces=value with spaces').getQuery() == {'key with spaces': ['value with spaces']}",
            t(),
        ),
        ("url('https://example.com/path?').getQuery() == {}", t()),
        ("url('https://example.com/path').getQuery() == {}", t()),
        (
            "url('https://user:pass@example.com:80/path?query=val#fragment').getQuery() == {'query': ['val']}",
            t(),
        ),
        (
            "url('https://example.com/a') == url('https://example.com/a')",
            t(),
        ),
    ]);
}

/// upstream: quantity_test.go (TestQuantity), less the mul/div cases added
/// after 1.33.
#[test]
fn quantity() {
    run(&[
        ("quantity('12Mi') == quantity('12582912')", t()),
        (
            "quantity('10Mo')",
            E("quantities must match the regular expression"),
        ),
        ("quantity('10Mm')", E("unable to parse quantity's suffix")),
        ("isQuantity('20')", t()),
        ("isQuantity('20M')", t()),
        ("isQuantity('20Mi')", t()),
        ("isQuantity('20Mo')", f()),
        ("isQuantity('10Mm')", f()),
        ("quantity('200M') == quantity('200M')", t()),
        (
            "quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')",
            t(),
        ),
        (
            "quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M') && quantity('0.002G') == quantity('2000k')",
            t(),
        ),
        ("quantity('200M') == quantity('0.3G')", f()),
        ("quantity('50M').isLessThan(quantity('50Mi'))", t()),
        ("quantity('50M').isLessThan(quantity('100M'))", t()),
        ("quantity('100M').isLessThan(quantity('50M'))", f()),
        ("quantity('50Mi').isGreaterThan(quantity('50M'))", t()),
        ("quantity('150Mi').isGreaterThan(quantity('100Mi'))", t()),
        ("quantity('50M').isGreaterThan(quantity('100M'))", f()),
        ("quantity('200M').compareTo(quantity('0.2G'))", i(0)),
        ("quantity('50M').compareTo(quantity('50Mi'))", i(-1)),
        ("quantity('50Mi').compareTo(quantity('50M'))", i(1)),
        (
            "quantity('50k').add(quantity('20')) == quantity('50.02k')",
            t(),
        ),
        ("quantity('50k').add(20).isLessThan(quantity('50020'))", f()),
        (
            "quantity('50k').sub(quantity('20')) == quantity('49.98k')",
            t(),
        ),
        ("quantity('50k').sub(20) == quantity('49980')", t()),
        (
            "quantity('50k').add(20).sub(quantity('100k')).asInteger()",
            i(-49980),
        ),
        (
            "quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger()",
            i(20),
        ),
        ("quantity('50k').asInteger()", i(50000)),
        (
            "quantity('9999999999999999999999999999999999999G').asInteger()",
            E("cannot convert value to integer"),
        ),
        (
            "quantity('9999999999999999999999999999999999999G').isInteger()",
            f(),
        ),
        ("quantity('50').isInteger()", t()),
        (
            "quantity('50.703k').asApproximateFloat()",
            V(Value::Float(50703.0)),
        ),
        ("sign(quantity('-1'))", i(-1)),
        ("sign(quantity('0'))", i(0)),
        ("sign(quantity('5m'))", i(1)),
        // resource.Quantity: rounded up to a nano, binary values capped.
        ("quantity('0.1n') == quantity('1n')", t()),
        ("quantity('16Ei') == quantity('9223372036854775807')", t()),
        ("quantity('1e3') == quantity('1k')", t()),
        ("quantity('1.5Gi').compareTo(quantity('1536Mi'))", i(0)),
        ("quantity('1000m').isInteger()", f()),
    ]);
}

/// upstream: ip.go doc examples and ip_test.go.
#[test]
fn ip() {
    run(&[
        ("isIP('127.0.0.1')", t()),
        ("isIP('::1')", t()),
        ("isIP('127.0.0.256')", f()),
        ("isIP(':::1')", f()),
        ("isIP('::ffff:1.2.3.4')", f()),
        ("isIP('fe80::1%eth0')", f()),
        ("isIP('01.2.3.4')", f()),
        (
            "ip('127.0.0.256')",
            E("IP Address \"127.0.0.256\" parse error during conversion from string"),
        ),
        (
            "ip('::ffff:1.2.3.4')",
            E("IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"),
        ),
        (
            "ip('fe80::1%eth0')",
            E("IP address \"fe80::1%eth0\" with zone value is not allowed"),
        ),
        ("ip.isCanonical('127.0.0.1')", t()),
        ("ip.isCanonical('2001:db8::abcd')", t()),
        ("ip.isCanonical('2001:DB8::ABCD')", f()),
        ("ip.isCanonical('2001:db8::0:0:0:abcd')", f()),
        ("ip('127.0.0.1').family()", i(4)),
        ("ip('::1').family()", i(6)),
        ("ip('0.0.0.0').isUnspecified()", t()),
        ("ip('127.0.0.1').isUnspecified()", f()),
        ("ip('::').isUnspecified()", t()),
        ("ip('::1').isUnspecified()", f()),
        ("ip('127.0.0.1').isLoopback()", t()),
        ("ip('192.168.0.1').isLoopback()", f()),
        ("ip('::1').isLoopback()", t()),
        ("ip('2001:db8::abcd').isLoopback()", f()),
        ("ip('224.0.0.1').isLinkLocalMulticast()", t()),
        ("ip('224.0.1.1').isLinkLocalMulticast()", f()),
        ("ip('ff02::1').isLinkLocalMulticast()", t()),
        ("ip('fd00::1').isLinkLocalMulticast()", f()),
        ("ip('169.254.169.254').isLinkLocalUnicast()", t()),
        ("ip('192.168.0.1').isLinkLocalUnicast()", f()),
        ("ip('fe80::1').isLinkLocalUnicast()", t()),
        ("ip('fd80::1').isLinkLocalUnicast()", f()),
        ("ip('192.168.0.1').isGlobalUnicast()", t()),
        ("ip('255.255.255.255').isGlobalUnicast()", f()),
        ("ip('2001:db8::abcd').isGlobalUnicast()", t()),
        ("ip('ff00::1').isGlobalUnicast()", f()),
        ("string(ip('2001:DB8::0:0:0:ABCD'))", s("2001:db8::abcd")),
        ("string(ip('::1.2.3.4'))", s("::102:304")),
        ("ip('127.0.0.1') == ip('127.0.0.1')", t()),
        ("ip('127.0.0.1') == ip('127.0.0.2')", f()),
        ("ip('::1') == ip('0:0::1')", t()),
    ]);
}

/// upstream: cidr.go doc examples and cidr_test.go.
#[test]
fn cidr() {
    run(&[
        ("isCIDR('192.168.0.0/24')", t()),
        ("isCIDR('::1/128')", t()),
        ("isCIDR('192.168.0.0/33')", f()),
        ("isCIDR('192.168.0.0')", f()),
        ("isCIDR('::ffff:1.2.3.4/120')", f()),
        ("isCIDR('192.168.0.0/024')", f()),
        (
            "cidr('192.168.0.0/33')",
            E("network address parse error during conversion from string"),
        ),
        (
            "cidr('::ffff:1.2.3.4/120')",
            E("IPv4-mapped IPv6 address \"::ffff:1.2.3.4/120\" is not allowed"),
        ),
        ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", t()),
        ("cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))", f()),
        ("cidr('192.168.0.0/24').containsIP('192.168.0.1')", t()),
        ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", f()),
        ("cidr('192.168.0.0/24').containsIP(ip('::1'))", f()),
        (
            "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))",
            t(),
        ),
        (
            "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))",
            f(),
        ),
        ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')", t()),
        ("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')", t()),
        (
            "cidr('2001:db8::/32').containsCIDR(cidr('2001:db8:1::/48'))",
            t(),
        ),
        (
            "cidr('2001:db8::/32').containsCIDR(cidr('2001:db9::/32'))",
            f(),
        ),
        ("cidr('192.168.0.0/24').ip() == ip('192.168.0.0')", t()),
        ("cidr('192.168.0.1/24').ip() == ip('192.168.0.1')", t()),
        ("cidr('192.168.0.1/24').ip().family()", i(4)),
        ("cidr('::1/128').ip() == ip('::1')", t()),
        ("cidr('::1/128').ip().family()", i(6)),
        (
            "cidr('192.168.0.0/24').masked() == cidr('192.168.0.0/24')",
            t(),
        ),
        (
            "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
            t(),
        ),
        (
            "cidr('192.168.0.0/24') == cidr('192.168.0.0/24').masked()",
            t(),
        ),
        (
            "cidr('192.168.0.1/24') == cidr('192.168.0.1/24').masked()",
            f(),
        ),
        ("cidr('192.168.0.0/16').prefixLength()", i(16)),
        ("cidr('::1/128').prefixLength()", i(128)),
        ("string(cidr('192.168.0.1/24'))", s("192.168.0.1/24")),
        ("string(cidr('2001:DB8::/32'))", s("2001:db8::/32")),
    ]);
}

/// upstream: format.go and format_test.go.
#[test]
fn format() {
    run(&[
        (
            "format.dns1123Label().validate('my-label-name') == optional.none()",
            t(),
        ),
        (
            "format.named('dns1123Label').value().validate('my-label-name').hasValue()",
            f(),
        ),
        ("format.named('unknown').hasValue()", f()),
        (
            "format.named('dns1123Label') == optional.of(format.dns1123Label())",
            t(),
        ),
        (
            "format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()",
            f(),
        ),
        (
            "format.dns1035Label().validate('my-label-name').hasValue()",
            f(),
        ),
        (
            "format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()",
            f(),
        ),
        (
            "format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()",
            f(),
        ),
        (
            "format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()",
            f(),
        ),
        (
            "format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue()",
            f(),
        ),
        (
            "format.labelValue().validate('my-cool-label-Value').hasValue()",
            f(),
        ),
        (
            "format.uri().validate('http://example.com').hasValue()",
            f(),
        ),
        (
            "format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
            f(),
        ),
        ("format.byte().validate('aGVsbG8=').hasValue()", f()),
        ("format.date().validate('2021-01-01').hasValue()", f()),
        (
            "format.datetime().validate('2021-01-01T00:00:00Z').hasValue()",
            f(),
        ),
        (
            "format.dns1123Label().validate('contains a space').value()",
            strings(&[
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ]),
        ),
        (
            "format.uri().validate('../relative').value()",
            strings(&["parse \"../relative\": invalid URI for request"]),
        ),
        (
            "format.uuid().validate('not-a-uuid').value()",
            strings(&["does not match the UUID format"]),
        ),
        (
            "format.byte().validate('aGVsbG8').value()",
            strings(&["invalid base64"]),
        ),
        (
            "format.date().validate('2021-13-01').value()",
            strings(&["invalid date"]),
        ),
        (
            "format.datetime().validate('2021-01-01').value()",
            strings(&["invalid datetime"]),
        ),
        ("format.labelValue().validate('-bad').hasValue()", t()),
    ]);
}

/// upstream: semver_test.go and semverlib.go doc examples.
#[test]
fn semver() {
    run(&[
        ("isSemver('1.0.0')", t()),
        ("isSemver('1.0.0-alpha.1+build.2')", t()),
        ("isSemver('hello')", f()),
        ("isSemver('v1.0')", f()),
        ("isSemver('v1.0', true)", t()),
        ("isSemver('1.0', true)", t()),
        ("isSemver('01.01.01', true)", t()),
        ("isSemver('01.01.01')", f()),
        ("isSemver('1.0-alpha', true)", f()),
        ("semver('200K')", E("No Major.Minor.Patch elements found")),
        ("semver('Three')", E("No Major.Minor.Patch elements found")),
        (
            "semver('1.a.0')",
            E("Invalid character(s) found in minor number \"a\""),
        ),
        ("semver('v1.0.0', true) == semver('1.0.0')", t()),
        ("semver('1.0', true) == semver('1.0.0')", t()),
        ("semver('01.01.01', true) == semver('1.1.1')", t()),
        ("semver('1.2.3').major()", i(1)),
        ("semver('1.2.3').minor()", i(2)),
        ("semver('1.2.3').patch()", i(3)),
        ("semver('1.2.3').compareTo(semver('1.2.3'))", i(0)),
        ("semver('1.2.3').compareTo(semver('2.0.0'))", i(-1)),
        ("semver('1.2.3').compareTo(semver('0.1.2'))", i(1)),
        ("semver('1.0.0-alpha').isLessThan(semver('1.0.0'))", t()),
        (
            "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
            t(),
        ),
        (
            "semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11'))",
            t(),
        ),
        ("semver('2.0.0').isGreaterThan(semver('1.9.9'))", t()),
        ("semver('1.0.0+a') == semver('1.0.0+b')", t()),
    ]);
}

/// upstream: cel-go ext/sets_test.go.
#[test]
fn sets() {
    run(&[
        ("sets.contains([], [])", t()),
        ("sets.contains([1], [])", t()),
        ("sets.contains([1], [1])", t()),
        ("sets.contains([1], [1, 1])", t()),
        ("sets.contains([1, 1], [1])", t()),
        ("sets.contains([2, 1], [1])", t()),
        ("sets.contains([1, 2, 3, 4], [2, 3])", t()),
        ("sets.contains([1], [1.0, 1u])", t()),
        ("sets.contains([1, 2], [2u, 2.0])", t()),
        ("sets.contains([[1], [2, 3]], [[2, 3.0]])", t()),
        ("sets.contains([1], [2])", f()),
        ("sets.contains([1], [1, 2])", f()),
        ("sets.contains([1], ['1', 1])", f()),
        ("sets.equivalent([], [])", t()),
        ("sets.equivalent([1], [1, 1])", t()),
        ("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", t()),
        ("sets.equivalent([2, 1], [1])", f()),
        ("sets.equivalent([1], [1u, 2, 3])", f()),
        ("sets.intersects([1], [1])", t()),
        ("sets.intersects([1], [1.0, 2])", t()),
        ("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])", t()),
        ("sets.intersects([], [])", f()),
        ("sets.intersects([1], [])", f()),
        ("sets.intersects([1], [2])", f()),
    ]);
}

/// upstream: cel-go ext/comprehensions_test.go.
#[test]
fn two_variable_comprehensions() {
    run(&[
        ("[1, 2, 3].all(i, v, i < 3 && v > 0)", t()),
        ("[1, 2, 3].all(i, v, i < v)", t()),
        ("[1, 2, 3].all(i, v, i > v)", f()),
        ("{'hello': 'world', 'taco': 'taco'}.all(k, v, k != v)", f()),
        (
            "{'hello': 'world', 'taco': 'taco'}.exists(k, v, k == v)",
            t(),
        ),
        ("[1, 2, 3].exists(i, v, i == 1 && v == 2)", t()),
        ("[1, 2, 3].exists(i, v, i > v)", f()),
        ("[1, 2, 1].existsOne(i, v, v == 2 && i == 1)", t()),
        ("[1, 2, 1].existsOne(i, v, v == 1)", f()),
        ("{'a': 1, 'b': 2}.existsOne(k, v, v == 2)", t()),
        (
            "[1, 2, 3].transformList(i, v, i * v)",
            V(Value::from(vec![0i64, 2, 6])),
        ),
        (
            "[1, 2, 3].transformList(i, v, i % 2 == 0, v * 2)",
            V(Value::from(vec![2i64, 6])),
        ),
        (
            "{'greeting': 'hello'}.transformList(k, v, k + ' ' + v)",
            strings(&["greeting hello"]),
        ),
        (
            "[1, 2, 3].transformMap(i, v, v * 2) == {0: 2, 1: 4, 2: 6}",
            t(),
        ),
        (
            "{'a': 1, 'b': 2}.transformMap(k, v, v + 1) == {'a': 2, 'b': 3}",
            t(),
        ),
        (
            "{'a': 1, 'b': 2}.transformMap(k, v, v > 1, v + 1) == {'b': 3}",
            t(),
        ),
        (
            "{'a': 'b'}.transformMapEntry(k, v, {v: k}) == {'b': 'a'}",
            t(),
        ),
        (
            "[1, 2].transformMapEntry(i, v, i > 0, {string(v): i}) == {'2': 1}",
            t(),
        ),
        (
            "{'a': 1, 'b': 1}.transformMapEntry(k, v, {'x': v})",
            E("already exists"),
        ),
        ("[[1, 2], [3]].all(i, l, l.all(j, v, v > i + j))", t()),
        ("[1].all(x, x, true)", E("compile")),
        // The one-variable forms are unchanged.
        ("[1, 2].all(x, x > 0) && [1, 2].exists(x, x == 2)", t()),
    ]);
}

fn ints(xs: &[i64]) -> Want {
    V(Value::from(xs.to_vec()))
}

/// upstream: cel-go v0.29.2 ext/lists_test.go (the cases its version 3
/// has; those with proto messages with maps instead), and the errors of its
/// functions.
#[test]
fn lists_extension() {
    run(&[
        ("lists.range(4) == [0,1,2,3]", t()),
        ("lists.range(0) == []", t()),
        (
            "lists.range(-1)",
            E("lists.range: size must be non-negative, got -1"),
        ),
        (
            "lists.range(1000001)",
            E("lists.range: size 1000001 exceeds maximum allowed (1000000)"),
        ),
        ("[5,1,2,3].reverse() == [3,2,1,5]", t()),
        ("[].reverse() == []", t()),
        ("[1].reverse() == [1]", t()),
        (
            "['are', 'you', 'as', 'bored', 'as', 'I', 'am'].reverse() == ['am', 'I', 'as', 'bored', 'as', 'you', 'are']",
            t(),
        ),
        (
            "[false, true, true].reverse().reverse() == [false, true, true]",
            t(),
        ),
        ("[1,2,3,4].slice(0, 4) == [1,2,3,4]", t()),
        ("[1,2,3,4].slice(0, 0) == []", t()),
        ("[1,2,3,4].slice(1, 1) == []", t()),
        ("[1,2,3,4].slice(4, 4) == []", t()),
        ("[1,2,3,4].slice(1, 3) == [2, 3]", t()),
        (
            "[1,2,3,4].slice(3, 0)",
            E("cannot slice(3, 0), start index must be less than or equal to end index"),
        ),
        (
            "[1,2,3,4].slice(0, 10)",
            E("cannot slice(0, 10), list is length 4"),
        ),
        (
            "[1,2,3,4].slice(-5, 10)",
            E("cannot slice(-5, 10), negative indexes not supported"),
        ),
        (
            "[1,2,3,4].slice(-5, -3)",
            E("cannot slice(-5, -3), negative indexes not supported"),
        ),
        ("dyn([]).flatten() == []", t()),
        ("dyn([1,2,3,4]).flatten() == [1,2,3,4]", t()),
        ("[1,[2,[3,4]]].flatten() == [1,2,[3,4]]", t()),
        ("[1,2,[],[],[3,4]].flatten() == [1,2,3,4]", t()),
        ("[1,[2,[3,4]]].flatten(2) == [1,2,3,4]", t()),
        (
            "[1,[2,[3,[4]]]].flatten(-1)",
            E("level must be non-negative"),
        ),
        ("[].flatten(-1)", E("level must be non-negative")),
        ("[[1], [2]].flatten(0) == [[1], [2]]", t()),
        (
            "[{'a': [1]}, [{'b': 2}]].flatten() == [{'a': [1]}, {'b': 2}]",
            t(),
        ),
        ("dyn({}).flatten()", E("")),
        ("[].sort() == []", t()),
        ("[1].sort() == [1]", t()),
        ("[4, 3, 2, 1].sort() == [1, 2, 3, 4]", t()),
        ("['d', 'a', 'b', 'c'].sort() == ['a', 'b', 'c', 'd']", t()),
        ("[2u, 1u].sort() == [1u, 2u]", t()),
        ("[2.5, -1.0].sort() == [-1.0, 2.5]", t()),
        ("[true, false].sort() == [false, true]", t()),
        ("[b'b', b'a'].sort() == [b'a', b'b']", t()),
        (
            "[duration('1m'), duration('2s')].sort() == [duration('2s'), duration('1m')]",
            t(),
        ),
        (
            "['d', 3, 2, 'c'].sort() == ['a', 'b', 'c', 'd']",
            E("list elements must have the same type"),
        ),
        (
            "[1, 2.0].sort()",
            E("list elements must have the same type"),
        ),
        ("[[1], [2]].sort()", E("list elements must be comparable")),
        ("[[1]].sort()", E("list elements must be comparable")),
        ("[].sortBy(e, e) == []", t()),
        ("['a'].sortBy(e, e) == ['a']", t()),
        (
            "[-3, 1, -5, -2, 4].sortBy(e, -(e * e)) == [-5, 4, -3, -2, 1]",
            t(),
        ),
        (
            "[-3, 1, -5, -2, 4].map(e, e * 2).sortBy(e, -(e * e)) == [-10, 8, -6, -4, 2]",
            t(),
        ),
        ("lists.range(3).sortBy(e, -e) == [2, 1, 0]", t()),
        (
            "['a', 'c', 'b', 'first'].sortBy(e, e == 'first' ? '' : e) == ['first', 'a', 'b', 'c']",
            t(),
        ),
        (
            "[{'name': 'foo'}, {'name': 'bar'}, {'name': 'baz'}].sortBy(e, e.name) == [{'name': 'bar'}, {'name': 'baz'}, {'name': 'foo'}]",
            t(),
        ),
        // Equal keys keep their order.
        ("[3, 1, 2, 4, 5].sortBy(e, e % 2) == [2, 4, 3, 1, 5]", t()),
        (
            "[1, 2, 3].sortBy(e, e == 2 ? 'a' : 1)",
            E("list elements must have the same type"),
        ),
        (
            "[[1], [2]].sortBy(e, e)",
            E("list elements must be comparable"),
        ),
        ("[].distinct() == []", t()),
        ("[1].distinct() == [1]", t()),
        ("[-2, 5, -2, 1, 1, 5, -2, 1].distinct() == [-2, 5, 1]", t()),
        (
            "['c', 'a', 'a', 'b', 'a', 'b', 'c', 'c'].distinct() == ['c', 'a', 'b']",
            t(),
        ),
        (
            "[1, 2.0, 'c', 3, 'c', 1].distinct() == [1, 2.0, 'c', 3]",
            t(),
        ),
        ("[1, 1.0, 2].distinct() == [1, 2]", t()),
        ("[[1], [1], [2]].distinct() == [[1], [2]]", t()),
        (
            "[{'name': 'a'}, {'name': 'b'}, {'name': 'a'}].distinct() == [{'name': 'a'}, {'name': 'b'}]",
            t(),
        ),
        ("lists.range(5).slice(1, 4).reverse()", ints(&[3, 2, 1])),
    ]);
}

/// `sortBy`'s expansion is checked as cel-go checks it.
#[test]
fn sort_by_parse_errors() {
    for (expr, message) in [
        (
            "'abc'.sortBy(e, e)",
            "ERROR: <input>:1:1: sortBy can only be applied to a list, identifier, comprehension, call or select expression",
        ),
        (
            "{'a': 1}.sortBy(e, e)",
            "ERROR: <input>:1:1: sortBy can only be applied to a list, identifier, comprehension, call or select expression",
        ),
        (
            "[1].sortBy(e.f, e)",
            "ERROR: <input>:1:13: argument is not an identifier",
        ),
    ] {
        let err = eval(expr).expect_err(expr);
        assert!(err.contains(message), "{expr}: {err}");
    }
}

/// upstream: apiserver pkg/cel/library/lists.go's `includes` examples and
/// environment_test.go.
#[test]
fn includes() {
    run(&[
        ("[1, 2, 3].includes(2)", t()),
        ("[1, 2, 3].includes(4)", f()),
        ("[1, 2].includes(2) == true", t()),
        ("[1, 2].includes(2.0)", t()),
        ("'model-a'.includes('model-a')", t()),
        ("'model-a'.includes('model-b')", f()),
        ("'model-a'.includes('model')", f()),
        ("{'a': 1}.includes('a')", f()),
        ("{'a': 1}.includes({'a': 1})", t()),
        ("[[1], [2]].includes([2])", t()),
        ("[].includes(1)", f()),
    ]);
}

/// cel-go's optional library at version 2 (kube-apiserver enables its
/// latest): `first`, `last`, `optional.unwrap`, `unwrapOpt`; and the
/// crate's `optMap`, `optFlatMap`.
#[test]
fn optional_lists() {
    run(&[
        ("[1, 2, 3].first().value() == 1", t()),
        ("[1, 2, 3].last().value() == 3", t()),
        ("[].first() == optional.none()", t()),
        ("[].last().hasValue()", f()),
        ("[1].first() == optional.of(1)", t()),
        (
            "optional.unwrap([optional.of(42), optional.none()]) == [42]",
            t(),
        ),
        (
            "[optional.of(42), optional.none()].unwrapOpt() == [42]",
            t(),
        ),
        ("optional.unwrap([]) == []", t()),
        ("[1].unwrapOpt()", E("")),
        ("[1, 2].first().optMap(x, x * 10).value()", i(10)),
        ("[].first().optMap(x, x * 10).hasValue()", f()),
        ("[[1]].last().optFlatMap(l, l.first()).value()", i(1)),
    ]);
}

#[test]
fn cel_bind_is_opt_in() {
    assert!(
        eval("cel.bind(x, 1, x + 1)").is_err(),
        "not in 1.37's base environment"
    );
    let mut env = env();
    env.add_macro(kubext_cel::library::macros::cel_bind())
        .unwrap();
    assert_eq!(
        eval_in(env, "cel.bind(x, 1, cel.bind(y, x + 1, x + y))"),
        Ok(Value::Int(3))
    );
}

/// Every declaration is well-formed, and its function resolves at runtime.
#[test]
fn declarations() {
    let decls: Vec<&str> = kubext_cel::library::declarations().collect();
    assert!(decls.len() > 80, "{}", decls.len());
    let mut seen = std::collections::HashSet::new();
    for d in &decls {
        assert!(seen.insert(*d), "duplicate declaration {d}");
        let (sig, result) = d
            .split_once(" -> ")
            .unwrap_or_else(|| panic!("no ' -> ' in {d}"));
        assert!(
            !result.is_empty() && !result.contains(' ') || result.starts_with("map("),
            "{d}"
        );
        let mut depth = 0i32;
        for c in d.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            assert!(depth >= 0, "unbalanced {d}");
        }
        assert_eq!(depth, 0, "unbalanced {d}");
        let (name, member) = match sig.strip_prefix('[') {
            Some(rest) => {
                let (_, after) = rest
                    .split_once("].")
                    .unwrap_or_else(|| panic!("bad receiver in {d}"));
                (after.split('(').next().unwrap(), true)
            }
            None => (sig.split('(').next().unwrap(), false),
        };
        assert!(!name.is_empty() && sig.ends_with(')'), "{d}");
        // Resolves: calling it with no fitting arguments is a "no matching
        // overload" error, not an undeclared reference.
        let call = if member {
            format!("null.{name}()")
        } else {
            format!("{name}(null, null, null, null)")
        };
        let got = eval(&call);
        let err = got.expect_err(&call);
        assert!(!err.contains("Undeclared reference"), "{d}: {err}");
    }
}
