//! `/openapi/v2` (JSON or gnostic protobuf, by `Accept`) and `/openapi/v3` (index and
//! per group-version documents), served from the catalog's cached documents.

use http::{HeaderValue, Response, header};

use apimachinery::StatusError;

use crate::api::Api;
use crate::response::{self, Body};

pub fn serve(api: &Api, path: &str, accept: &str) -> Response<Body> {
    let catalog = api.catalog();
    match path {
        "/openapi/v2" => {
            if openapi::V2_PROTOBUF_ACCEPT
                .iter()
                .any(|a| accept.contains(a))
            {
                response::respond(
                    200,
                    openapi::V2_PROTOBUF_CONTENT_TYPE,
                    catalog.openapi_v2().1.clone(),
                )
            } else {
                response::json(200, catalog.openapi_v2().0.clone())
            }
        }
        "/openapi/v3" => response::json(200, catalog.openapi_index()),
        p => match p
            .strip_prefix("/openapi/v3/")
            .and_then(|gv| catalog.openapi_group_version(gv))
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
