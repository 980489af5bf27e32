use super::*;

#[test]
fn a_directory_listing_reads_the_siblings_once() {
    let dir = tempfile::tempdir().unwrap();
    let n = 40u64;
    for i in 0..n {
        let p = 0x7fe7_e2ff_f010u64 + i * 8000;
        std::fs::write(
            dir.path().join(format!("k{i:03}.json")),
            format!(
                "{{\"ArgOffsets\":[0,0],\"ArgPtrs\":[1000,{p}],\"DeviceId\":0,\
                 \"DeviceMemorySize\":{},\"LoopTripCount\":1000,\"Name\":\"k{i}\",\
                 \"NumArgs\":2,\"NumTeamsClause\":0,\"ThreadLimitClause\":0}}",
                (i + 1) * 8000
            ),
        )
        .unwrap();
    }
    crate::capture::base::tests::SIBLING_READS.with(|c| c.set(0));
    let entries = scan(dir.path(), false).unwrap();
    assert_eq!(
        crate::capture::base::tests::SIBLING_READS.with(|c| c.get()),
        1
    );
    let mut derived = 0;
    for e in &entries {
        if let Entry::Capture(d) = e {
            assert_eq!(
                d.base_addr(),
                Some(0x7fe7_e2ff_f010),
                "{:?}",
                d.base_origin()
            );
            derived += 1;
        }
    }
    assert_eq!(derived, n as usize);
}
