use super::*;

#[test]
fn array_lists_are_compressed_into_ranges() {
    assert_eq!(array_spec(&[0, 1, 2, 3]), "0-3");
    assert_eq!(array_spec(&[1, 3]), "1,3");
    assert_eq!(array_spec(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
    assert_eq!(array_spec(&[4]), "4");
}

#[test]
fn scontrol_records_give_each_task_its_end() {
    let text = "JobId=5 ArrayJobId=1 ArrayTaskId=3 JobName=c JobState=CANCELLED \
                Reason=None ExitCode=0:15\n\
                JobId=1 ArrayJobId=1 ArrayTaskId=0-1 JobState=COMPLETED Reason=None \
                ExitCode=0:0\n\
                JobId=4 ArrayJobId=1 ArrayTaskId=2 JobState=FAILED Reason=NonZeroExitCode \
                ExitCode=1:0\n";
    let ends = parse_show_job(text);
    assert_eq!(ends.len(), 4);
    assert_eq!(ends[&3].state, "CANCELLED");
    assert_eq!(ends[&3].exit_status(), None);
    assert_eq!(ends[&1].state, "COMPLETED");
    assert_eq!(ends[&2].exit_status(), Some(1));
    assert_eq!(task_list("0-7%2").len(), 8);
    assert_eq!(task_list("1,3"), vec![1, 3]);
}
