//! What the request path boxes to keep it from being copied.
//!
//! `Box::pin(make())` builds the future on the stack, then copies all of it
//! (every state's size, ~9 KiB for a request's handler) into the heap. Built
//! into the box's own memory instead, only its arguments are written.

use std::future::Future;
use std::pin::Pin;

/// A request as the chain's stages and the handlers pass it on: boxed once,
/// as it arrives, since each is an async function holding it by value and
/// moving the ~250-byte `Request` into every one's state was a copy each
/// (~0.7 k instructions a request in all).
pub type BoxedRequest = Box<http::Request<hyper::body::Incoming>>;

/// `Box::pin(make())`, with the future built in the box.
#[inline(always)]
pub fn pin_in_place<F: Future>(make: impl FnOnce() -> F) -> Pin<Box<F>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn large(seed: u64) -> u64 {
        let table = [seed; 1024];
        tokio::task::yield_now().await;
        table.iter().sum()
    }

    #[tokio::test]
    async fn equals_the_plain_box() {
        let plain = Box::pin(large(3)).await;
        let in_place = pin_in_place(|| large(3)).await;
        assert_eq!(in_place, plain);
        assert_eq!(in_place, 3 * 1024);
    }
}
