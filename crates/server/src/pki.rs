//! Development PKI: a cluster CA, the serving certificate and the admin client
//! certificate, created in the data dir on first start and reused afterwards,
//! plus the admin kubeconfig.

use anyhow::{Context, Result};
use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

/// A PEM certificate and its PEM private key.
#[derive(Clone)]
pub struct CertPair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The certificates the server needs at start.
pub struct Pki {
    pub ca: CertPair,
    pub serving: CertPair,
    pub admin: CertPair,
    /// A separate CA for the aggregator's identity towards extension servers, and the
    /// client certificate it signs (CN `front-proxy-client`).
    pub front_proxy_ca: CertPair,
    pub front_proxy_client: CertPair,
    /// Signs service-account tokens: `sa.key` (PKCS#8) and `sa.pub`.
    pub service_account_key: KeyPairPem,
}

/// A PEM private key and its PEM public key.
#[derive(Clone)]
pub struct KeyPairPem {
    pub private_pem: String,
    pub public_pem: String,
}

impl Pki {
    /// Load `<dir>/{ca,serving,admin,front-proxy-ca,front-proxy-client}.{crt,key}`,
    /// creating whatever is missing.
    /// `hosts` become the serving certificate's SANs.
    pub fn load_or_create(dir: &Path, hosts: &[String]) -> Result<Pki> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create PKI directory {}", dir.display()))?;
        let ca = load_or(dir, "ca", || new_ca("kubext-ca"))?;
        let ca_key = KeyPair::from_pem(&ca.key_pem).context("invalid CA key")?;
        let issuer =
            Issuer::from_ca_cert_pem(&ca.cert_pem, ca_key).context("invalid CA certificate")?;
        let serving = load_or(dir, "serving", || {
            let mut params = CertificateParams::new(hosts.to_vec())?;
            params.distinguished_name = name("kube-apiserver", None);
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            sign(params, &issuer)
        })?;
        let admin = load_or(dir, "admin", || {
            let mut params = CertificateParams::new(Vec::<String>::new())?;
            params.distinguished_name = name("kubext-admin", Some("system:masters"));
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            sign(params, &issuer)
        })?;
        let front_proxy_ca = load_or(dir, "front-proxy-ca", || new_ca("front-proxy-ca"))?;
        let fp_key =
            KeyPair::from_pem(&front_proxy_ca.key_pem).context("invalid front-proxy CA key")?;
        let fp_issuer = Issuer::from_ca_cert_pem(&front_proxy_ca.cert_pem, fp_key)
            .context("invalid front-proxy CA certificate")?;
        let front_proxy_client = load_or(dir, "front-proxy-client", || {
            let mut params = CertificateParams::new(Vec::<String>::new())?;
            params.distinguished_name = name("front-proxy-client", None);
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
            sign(params, &fp_issuer)
        })?;
        let service_account_key = load_or_create_key(dir, "sa")?;
        Ok(Pki {
            ca,
            serving,
            admin,
            front_proxy_ca,
            front_proxy_client,
            service_account_key,
        })
    }
}

/// `<dir>/<stem>.key` and `<stem>.pub`: an ECDSA P-256 key pair, created if missing.
fn load_or_create_key(dir: &Path, stem: &str) -> Result<KeyPairPem> {
    let (private, public) = (
        dir.join(format!("{stem}.key")),
        dir.join(format!("{stem}.pub")),
    );
    if private.exists() && public.exists() {
        return Ok(KeyPairPem {
            private_pem: std::fs::read_to_string(&private)
                .with_context(|| format!("reading {}", private.display()))?,
            public_pem: std::fs::read_to_string(&public)
                .with_context(|| format!("reading {}", public.display()))?,
        });
    }
    let key = KeyPair::generate().with_context(|| format!("generating {stem} key"))?;
    let pair = KeyPairPem {
        private_pem: key.serialize_pem(),
        public_pem: key.public_key_pem(),
    };
    write_private(&private, &pair.private_pem)?;
    write_private(&public, &pair.public_pem)?;
    Ok(pair)
}

fn name(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(o) = organization {
        dn.push(DnType::OrganizationName, o);
    }
    dn
}

fn new_ca(common_name: &str) -> Result<CertPair, rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = name(common_name, None);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok(CertPair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn sign(params: CertificateParams, issuer: &Issuer<'_, KeyPair>) -> Result<CertPair, rcgen::Error> {
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;
    Ok(CertPair {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

fn load_or(
    dir: &Path,
    stem: &str,
    create: impl FnOnce() -> Result<CertPair, rcgen::Error>,
) -> Result<CertPair> {
    let (crt, key) = (
        dir.join(format!("{stem}.crt")),
        dir.join(format!("{stem}.key")),
    );
    if crt.exists() && key.exists() {
        return Ok(CertPair {
            cert_pem: std::fs::read_to_string(&crt)
                .with_context(|| format!("reading {}", crt.display()))?,
            key_pem: std::fs::read_to_string(&key)
                .with_context(|| format!("reading {}", key.display()))?,
        });
    }
    let pair = create().with_context(|| format!("generating {stem} certificate"))?;
    write_private(&crt, &pair.cert_pem)?;
    write_private(&key, &pair.key_pem)?;
    Ok(pair)
}

/// Write a file readable only by its owner (keys and kubeconfigs carry credentials).
pub fn write_private(path: &Path, contents: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    f.write_all(contents.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The admin kubeconfig: embedded CA, server URL, admin client certificate.
pub fn kubeconfig(server: &str, ca_pem: &str, client: &CertPair) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kubext\n  cluster:\n    server: {server}\n    certificate-authority-data: {}\nusers:\n- name: kubext-admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\ncontexts:\n- name: kubext\n  context:\n    cluster: kubext\n    user: kubext-admin\ncurrent-context: kubext\n",
        b64(ca_pem),
        b64(&client.cert_pem),
        b64(&client.key_pem)
    )
}

pub fn kubeconfig_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.kubeconfig")
}
