//! `/openapi/v2` and `/openapi/v3`. Not served yet: kubectl falls back to
//! server-side field validation.

use http::Response;

use apimachinery::StatusError;

use crate::api::Api;
use crate::response::{self, Body};

pub fn serve(_api: &Api, _path: &str, _accept: &str) -> Response<Body> {
    response::error(&StatusError::path_not_found())
}
