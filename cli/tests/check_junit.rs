//! `reprise check --junit` against a JUnit schema, with xmllint: a report
//! holding every kind of testcase (passed, a failure, errors, skipped)
//! is valid, as is the report of a merge. The schema is the common JUnit
//! one (Jenkins' junit-10.xsd, as CI systems read it) with typed counts
//! and times. Skips with a message when xmllint is absent, unless
//! REPRISE_REQUIRE_XMLLINT=1 (CI).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use reprise::RecordConfig;

const SCHEMA: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:simpleType name="count"><xs:restriction base="xs:nonNegativeInteger"/></xs:simpleType>
  <xs:simpleType name="seconds"><xs:restriction base="xs:decimal"><xs:minInclusive value="0"/></xs:restriction></xs:simpleType>
  <xs:complexType name="problem" mixed="true">
    <xs:attribute name="message" type="xs:string"/>
    <xs:attribute name="type" type="xs:string"/>
  </xs:complexType>
  <xs:element name="failure" type="problem"/>
  <xs:element name="error" type="problem"/>
  <xs:element name="skipped">
    <xs:complexType mixed="true"><xs:attribute name="message" type="xs:string"/></xs:complexType>
  </xs:element>
  <xs:element name="system-out" type="xs:string"/>
  <xs:element name="system-err" type="xs:string"/>
  <xs:element name="testcase">
    <xs:complexType>
      <xs:choice minOccurs="0" maxOccurs="unbounded">
        <xs:element ref="skipped"/>
        <xs:element ref="error"/>
        <xs:element ref="failure"/>
        <xs:element ref="system-out"/>
        <xs:element ref="system-err"/>
      </xs:choice>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="classname" type="xs:string"/>
      <xs:attribute name="assertions" type="count"/>
      <xs:attribute name="time" type="seconds"/>
      <xs:attribute name="status" type="xs:string"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuite">
    <xs:complexType>
      <xs:sequence>
        <xs:element ref="testcase" minOccurs="0" maxOccurs="unbounded"/>
        <xs:element ref="system-out" minOccurs="0"/>
        <xs:element ref="system-err" minOccurs="0"/>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="tests" type="count" use="required"/>
      <xs:attribute name="failures" type="count"/>
      <xs:attribute name="errors" type="count"/>
      <xs:attribute name="skipped" type="count"/>
      <xs:attribute name="disabled" type="count"/>
      <xs:attribute name="time" type="seconds"/>
      <xs:attribute name="timestamp" type="xs:string"/>
      <xs:attribute name="hostname" type="xs:string"/>
      <xs:attribute name="id" type="xs:string"/>
      <xs:attribute name="package" type="xs:string"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence>
        <xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="time" type="seconds"/>
      <xs:attribute name="tests" type="count"/>
      <xs:attribute name="failures" type="count"/>
      <xs:attribute name="disabled" type="count"/>
      <xs:attribute name="errors" type="count"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
"#;

/// Whether xmllint runs here; says why not.
fn xmllint() -> bool {
    let required = std::env::var_os("REPRISE_REQUIRE_XMLLINT").is_some_and(|v| v == "1");
    match Command::new("xmllint").arg("--version").output() {
        Ok(_) => true,
        Err(e) => {
            assert!(!required, "REPRISE_REQUIRE_XMLLINT=1, but xmllint: {e}");
            crate::common::skip(
                &format!("xmllint is not here ({e}; Debian's libxml2-utils)"),
                Some("libxml2-utils"),
            );
            false
        }
    }
}

fn config(dir: &Path) -> RecordConfig {
    std::fs::create_dir_all(dir).unwrap();
    RecordConfig::default()
        .enabled(true)
        .dir(dir)
        .region_size(64 << 20)
        .fsync(false)
        .format(reprise::CaptureFormat::Raw)
}

fn valid(schema: &Path, xml: &Path) {
    let o = Command::new("xmllint")
        .args(["--noout", "--schema", s(schema), s(xml)])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && said.contains("validates"),
        "{said}\n{}",
        std::fs::read_to_string(xml).unwrap()
    );
}

fn modal(dir: &Path, mode: i64) -> PathBuf {
    let d = record_check_modes(config(dir), 16, 1).remove(0);
    set_check_mode(&d, mode);
    d
}

#[test]
fn the_junit_report_is_valid_against_the_junit_schema() {
    if !xmllint() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("corpus");
    let ok = record_axpy(config(&root.join("a <&> \"b\"")), 64, 3);
    corrupt_output(&ok[1], 4);
    modal(&root.join("faults"), 2);
    modal(&root.join("hangs"), 1);
    let incomplete = modal(&root.join("incomplete"), 0);
    let image =
        reprise_std::CapturePaths::new(&incomplete, reprise::core::record::Generation::Reprise)
            .image;
    std::fs::remove_file(image).unwrap();
    let schema = dir.path().join("junit.xsd");
    std::fs::write(&schema, SCHEMA).unwrap();

    let xml = dir.path().join("report.xml");
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    let results = shards.join("all.jsonl");
    let out = reprise(&[
        "check",
        s(&root),
        "--timeout",
        "1",
        "--repetitions",
        "1",
        "--junit",
        s(&xml),
        "--results",
        s(&results),
    ]);
    assert_exit(&out, 2);
    let text = std::fs::read_to_string(&xml).unwrap();
    for element in ["<failure", "<error", "<skipped"] {
        assert!(text.contains(element), "{element} missing:\n{text}");
    }
    valid(&schema, &xml);
    // A merge's report too.
    let merged = dir.path().join("merged.xml");
    let out = reprise(&["check", "--merge", s(&shards), "--junit", s(&merged)]);
    assert_exit(&out, 2);
    valid(&schema, &merged);
    // The schema rejects what is no JUnit report (it checks something).
    let bad = dir.path().join("bad.xml");
    std::fs::write(&bad, text.replace("tests=\"", "tests=\"x")).unwrap();
    let o = Command::new("xmllint")
        .args(["--noout", "--schema", s(&schema), s(&bad)])
        .output()
        .unwrap();
    assert!(!o.status.success(), "a count of x validated");
}
