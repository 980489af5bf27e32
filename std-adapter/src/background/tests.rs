use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

#[test]
fn runs_jobs_in_order_and_reports_errors() {
    let w = BackgroundWriter::new(QueueLimit {
        jobs: 1,
        bytes: 1 << 20,
    })
    .unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    for i in 0..5 {
        let order = order.clone();
        w.submit(
            Box::new(move || {
                order.lock().unwrap().push(i);
                Ok(PathBuf::from(format!("c{i}.json")))
            }),
            10,
        )
        .unwrap();
    }
    let written = w.flush().unwrap();
    assert_eq!(written.len(), 5);
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    w.submit(
        Box::new(|| {
            Err(Error::io(
                "capture.json",
                "write",
                std::io::Error::other("disk full"),
            ))
        }),
        10,
    )
    .unwrap();
    assert_eq!(
        w.flush().unwrap_err().to_string(),
        "capture.json: write failed: disk full"
    );
    assert!(w.finish().unwrap().is_empty());
}

#[test]
fn drop_waits_for_pending_jobs() {
    let count = Arc::new(AtomicUsize::new(0));
    {
        let w = BackgroundWriter::new(QueueLimit {
            jobs: 2,
            bytes: 1 << 20,
        })
        .unwrap();
        for _ in 0..4 {
            let c = count.clone();
            w.submit(
                Box::new(move || {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    c.fetch_add(1, Ordering::SeqCst);
                    Ok(PathBuf::new())
                }),
                10,
            )
            .unwrap();
        }
    }
    assert_eq!(count.load(Ordering::SeqCst), 4);
}

/// A job that waits for `gate` before it is done.
fn gated(gate: Arc<(Mutex<bool>, Condvar)>) -> Job {
    Box::new(move || {
        let (open, cv) = &*gate;
        let mut o = open.lock().unwrap();
        while !*o {
            o = cv.wait(o).unwrap();
        }
        Ok(PathBuf::from("gated.json"))
    })
}

#[test]
fn the_queue_is_bounded_by_bytes_not_by_count() {
    let w = Arc::new(
        BackgroundWriter::new(QueueLimit {
            jobs: 1000,
            bytes: 100,
        })
        .unwrap(),
    );
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    // Many small captures fit, whatever their number ...
    w.submit(gated(gate.clone()), 10).unwrap();
    for _ in 0..8 {
        w.submit(Box::new(|| Ok(PathBuf::new())), 10).unwrap();
    }
    assert_eq!(w.pending(), (9, 90));
    // ... but one that would pass the bytes waits for room.
    let w2 = w.clone();
    let big = std::thread::spawn(move || w2.submit(Box::new(|| Ok(PathBuf::new())), 50));
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(w.pending(), (9, 90), "the large capture waited");
    assert!(!big.is_finished());
    let (open, cv) = &*gate;
    *open.lock().unwrap() = true;
    cv.notify_all();
    big.join().unwrap().unwrap();
    assert_eq!(w.flush().unwrap().len(), 10);
    assert_eq!(w.pending(), (0, 0));
    // A capture larger than the bound alone still goes, into an empty
    // queue.
    w.submit(Box::new(|| Ok(PathBuf::from("huge.json"))), 1000)
        .unwrap();
    assert_eq!(w.flush().unwrap(), [PathBuf::from("huge.json")]);
}

#[test]
fn a_panicking_job_stops_the_writer_without_a_hang() {
    let w = BackgroundWriter::new(QueueLimit { jobs: 1, bytes: 10 }).unwrap();
    w.submit(
        Box::new(|| panic!("a writer job panicked (expected by the test)")),
        10,
    )
    .unwrap();
    // The queue is full until the job ends; the writer's end frees it.
    let e = w.submit(Box::new(|| Ok(PathBuf::new())), 10);
    assert!(matches!(e, Err(Error::WriterStopped)), "{e:?}");
    assert!(matches!(w.flush(), Err(Error::WriterStopped)));
}
