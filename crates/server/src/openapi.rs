//! `/openapi/v2` (JSON or gnostic protobuf, by `Accept`) and `/openapi/v3` (index and
//! per group-version documents), served from the catalog's cached documents.

use http::{HeaderValue, Response, header};

use apimachinery::StatusError;

use crate::api::Api;
use crate::response::{self, Body};

pub fn serve(api: &Api, path: &str, accept: &str) -> Response<Body> {
    let catalog = api.catalog();
    let docs = catalog.openapi();
    match path {
        "/openapi/v2" => {
            if openapi::V2_PROTOBUF_ACCEPT
                .iter()
                .any(|a| accept.contains(a))
            {
                response::respond(
                    200,
                    openapi::V2_PROTOBUF_CONTENT_TYPE,
                    docs.v2_protobuf().to_vec(),
                )
            } else {
                response::json(200, docs.v2().to_vec())
            }
        }
        "/openapi/v3" => response::json(200, docs.v3_index().to_vec()),
        p => match p
            .strip_prefix("/openapi/v3/")
            .and_then(|gv| docs.v3_group_version(gv))
        {
            Some(doc) => {
                let mut resp = response::json(200, doc.json.clone());
                let headers = resp.headers_mut();
                if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", doc.hash)) {
                    headers.insert(header::ETAG, etag);
                }
                headers.insert(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, immutable"),
                );
                resp
            }
            None => response::error(&StatusError::path_not_found()),
        },
    }
}
