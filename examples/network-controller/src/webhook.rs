//! The operator's own validating admission webhook (`--webhook-addr`): served
//! over TLS with a certificate it makes at start, registered as a
//! ValidatingWebhookConfiguration (by URL, with that certificate as its
//! caBundle), answering with kube-rs's `kube::core::admission` types. A
//! Network the controller could only mark `Invalid` (a gateway outside its
//! CIDR) is refused when written instead.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Patch, PatchParams};
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube::{Api, Client};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::network::{NetworkSpec, allocate};
use crate::reconcile::MANAGER;

/// The configuration's (and its one webhook's) name.
pub const NAME: &str = "networks.samplecrd.k8s.io";
const PATH: &str = "/validate-network";

/// Serve the webhook on `addr` (as `host` for the API server) and register it.
pub async fn start(client: Client, addr: SocketAddr, host: &str) -> Result<()> {
    let key = rcgen::KeyPair::generate()?;
    let cert = rcgen::CertificateParams::new(vec![host.to_string()])?.self_signed(&key)?;
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("webhook: cannot listen on {addr}"))?;
    let port = listener.local_addr()?.port();
    let tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )?;
    tokio::spawn(serve(listener, TlsAcceptor::from(Arc::new(tls))));
    register(&client, host, port, &cert.pem()).await?;
    tracing::info!(%host, port, "validating webhook registered");
    Ok(())
}

/// Server-side apply the ValidatingWebhookConfiguration pointing at us.
async fn register(client: &Client, host: &str, port: u16, ca_pem: &str) -> Result<()> {
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    let config: ValidatingWebhookConfiguration = serde_json::from_value(serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": NAME},
        "webhooks": [{
            "name": NAME,
            "clientConfig": {
                "url": format!("https://{host}:{port}{PATH}"),
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            },
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["samplecrd.k8s.io"],
                       "apiVersions": ["v1"], "resources": ["networks"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": "Fail",
            "timeoutSeconds": 5,
        }],
    }))?;
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .patch(
            NAME,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&config),
        )
        .await
        .context("registering the validating webhook")?;
    Ok(())
}

async fn serve(listener: TcpListener, tls: TlsAcceptor) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let tls = tls.clone();
        tokio::spawn(async move {
            let Ok(stream) = tls.accept(tcp).await else {
                return;
            };
            let service = hyper::service::service_fn(handle);
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    if req.uri().path() != PATH {
        return Ok(answer(StatusCode::NOT_FOUND, Bytes::new()));
    }
    let body = req.into_body().collect().await?.to_bytes();
    let review = match serde_json::from_slice::<AdmissionReview<DynamicObject>>(&body) {
        Ok(review) => review,
        Err(e) => return Ok(answer(StatusCode::BAD_REQUEST, Bytes::from(e.to_string()))),
    };
    let response = match TryInto::<AdmissionRequest<DynamicObject>>::try_into(review) {
        Ok(request) => admit(&request).into_review(),
        Err(e) => AdmissionResponse::invalid(e.to_string()).into_review(),
    };
    let body = serde_json::to_vec(&response).unwrap_or_default();
    Ok(answer(StatusCode::OK, Bytes::from(body)))
}

/// Refuse a Network whose spec cannot be allocated.
fn admit(request: &AdmissionRequest<DynamicObject>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let spec = request
        .object
        .as_ref()
        .and_then(|o| o.data.get("spec"))
        .and_then(|s| serde_json::from_value::<NetworkSpec>(s.clone()).ok());
    match spec.map(|s| allocate(&s)) {
        Some(Err(invalid)) => response.deny(invalid.to_string()),
        _ => response,
    }
}

fn answer(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}
