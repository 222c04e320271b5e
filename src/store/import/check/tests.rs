//! Each kind of crafted value is refused naming its table, row and column.

use super::*;

fn col(name: &str, kind: &str, not_null: bool) -> Column {
    Column {
        name: name.into(),
        kind: kind.into(),
        not_null,
    }
}

#[test]
fn values_are_checked_for_type_range_and_meaning() {
    let cycles = col("cycles", "INTEGER", true);
    assert_eq!(
        check_value("windows", &cycles, ValueRef::Integer(i64::MAX)),
        Err(format!("{} is out of range (0 to {COUNT})", i64::MAX))
    );
    assert_eq!(
        check_value("windows", &cycles, ValueRef::Integer(1000)),
        Ok(())
    );
    assert_eq!(
        check_value("windows", &cycles, ValueRef::Text(b"12")),
        Err("text where the schema has INTEGER".into())
    );
    assert_eq!(
        check_value("windows", &cycles, ValueRef::Null),
        Err("NULL where a value is needed".into())
    );
    let status = col("status", "TEXT", true);
    assert_eq!(
        check_value("runs", &status, ValueRef::Text(b"done")),
        Err("\"done\" is not a run status".into())
    );
    let result = col("result_json", "TEXT", false);
    assert!(check_value("cells", &result, ValueRef::Text(b"{}"))
        .unwrap_err()
        .starts_with("not a result jitterlab reads: missing field"));
    assert_eq!(check_value("cells", &result, ValueRef::Null), Ok(()));
    let hist = col("hist_positive", "BLOB", false);
    assert!(
        check_value("metrics", &hist, ValueRef::Blob(b"\x1c\x84\x93\x13junk"))
            .unwrap_err()
            .starts_with("reading the stored histogram of the metric: ")
    );
    assert_eq!(check_value("metrics", &hist, ValueRef::Blob(b"")), Ok(()));
}
