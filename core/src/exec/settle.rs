//! Waiting on a queue and taking its buffers back: the one place that
//! does, for the schedules and every driver above them.

use core::future::poll_fn;

use super::{Queue, Ticket};

/// Waits until everything enqueued on `queue` has completed, or the
/// queue reports an error ([`Queue::poll_synchronize`]).
pub async fn synchronize<Q: Queue + ?Sized>(queue: &mut Q) -> Result<(), Q::Error> {
    poll_fn(|cx| queue.poll_synchronize(cx)).await
}

/// Synchronizes `queue` ([`synchronize`]), then hands every buffer it gives
/// back ([`Queue::reclaim`]) to `take` with the ticket of its copy, and
/// returns what the synchronize said: after an error, the buffers of the
/// copies that completed still come back (and `take` may drop them).
///
/// ```
/// # use reprise_core::exec::{settle, Ticket};
/// # async fn demo<Q: reprise_core::exec::Queue>(q: &mut Q, mine: Ticket)
/// #     -> Result<Option<Q::Buffer>, Q::Error> {
/// let mut back = None;
/// settle(q, |ticket, buffer| {
///     if ticket == mine {
///         back = Some(buffer);
///     }
/// })
/// .await?;
/// # Ok(back) }
/// ```
pub async fn settle<Q: Queue + ?Sized>(
    queue: &mut Q,
    mut take: impl FnMut(Ticket, Q::Buffer),
) -> Result<(), Q::Error> {
    let done = synchronize(queue).await;
    while let Some((ticket, buffer)) = queue.reclaim() {
        take(ticket, buffer);
    }
    done
}
