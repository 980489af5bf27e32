use super::*;

#[test]
fn levels_cross_jit_settings_into_distinct_labels() {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        a: TuneArgs,
    }
    let mut a = <Cli as clap::Parser>::parse_from(["t", "x.json", "--opt-level", "O1,O3,O1"]).a;
    let levels: Vec<Option<u8>> = compiles(&a).iter().map(|c| c.level).collect();
    assert_eq!(levels, [Some(1), Some(3)]);
    assert!(compiles(&a).iter().all(|c| c.jit.is_none()));
    a.jit.max_registers = Some(crate::tune::lists::ValueList(vec![32, 64]));
    let labels: Vec<String> = compiles(&a).iter().filter_map(Compile::label).collect();
    assert_eq!(
        labels,
        [
            "O1,MAX_REGISTERS=32",
            "O1,MAX_REGISTERS=64",
            "O3,MAX_REGISTERS=32",
            "O3,MAX_REGISTERS=64"
        ]
    );
    let mut row: Row = serde_json::from_str(
        r#"{"grid":[4,1,1],"block":[256,1,1],"shared_mem":0,"recorded":true,"status":"verified","detail":null,"times_ns":[5]}"#,
    )
    .unwrap();
    compiles(&a)[3].stamp(&mut row);
    assert_eq!(row.compile().as_deref(), Some("O3,MAX_REGISTERS=64"));
}
