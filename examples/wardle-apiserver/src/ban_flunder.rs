//! sample-apiserver's BanFlunder admission: a Flunder may not take a name that a
//! Fischer lists in `disallowedFlunders`.

use apiserver::{Admission, Objects, Operation, RequestContext, StatusError};
use serde_json::Value;

pub struct BanFlunder {
    pub objects: Objects,
}

#[async_trait::async_trait]
impl Admission for BanFlunder {
    async fn admit(
        &self,
        operation: Operation,
        new: &Value,
        _old: Option<&Value>,
        _ctx: &RequestContext,
    ) -> Result<(), StatusError> {
        if operation != Operation::Create {
            return Ok(());
        }
        let name = apiserver::meta::name(new);
        let fischers = self
            .objects
            .list("wardle.example.com", "v1alpha1", "fischers", "")
            .await?;
        let banned = fischers.iter().any(|f| {
            f["disallowedFlunders"]
                .as_array()
                .is_some_and(|names| names.iter().any(|n| n == name))
        });
        if banned {
            return Err(StatusError::forbidden(
                &flunders(),
                name,
                "this name may not be used, please change the resource name",
            ));
        }
        Ok(())
    }
}

fn flunders() -> apiserver::GroupResource {
    apiserver::GroupResource::new("wardle.example.com", "flunders")
}
