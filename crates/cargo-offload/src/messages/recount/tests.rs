use super::*;

/// cargo's summary lines (cargo 1.96 and 1.101-nightly; rustc 1.96 warning
/// that `+ptx78` is unstable, rustc's E0061 after a kernel calling a kernel)
/// without the diagnostics left out.
#[test]
fn summary_lines_do_not_count_the_diagnostics_left_out() {
    let w = Left { errors: 0, warnings: 1 };
    let left: HashMap<String, Left> = [
        ("fixture_device_error".to_string(), w),
        ("lib:my_lib".to_string(), w),
        ("two".to_string(), w),
        ("fixture_device_messages".to_string(), Left { errors: 1, warnings: 0 }),
    ]
    .into();
    let table: &[(&str, Option<&str>)] = &[
        (
            "error: could not compile `fixture_device_error` (bin \"fixture_device_error\") due to 1 previous error; \
             1 warning emitted",
            Some("error: could not compile `fixture_device_error` (bin \"fixture_device_error\") due to 1 previous error"),
        ),
        (
            "error: could not compile `my-lib` (lib) due to 2 previous errors; 3 warnings emitted",
            Some("error: could not compile `my-lib` (lib) due to 2 previous errors; 2 warnings emitted"),
        ),
        ("warning: `my-lib` (lib) generated 1 warning", None),
        ("warning: `app` (bin \"two\") generated 2 warnings", Some("warning: `app` (bin \"two\") generated 1 warning")),
        (
            "error: could not compile `fixture_device_messages` (bin \"fixture_device_messages\") due to 2 previous errors",
            Some(
                "error: could not compile `fixture_device_messages` (bin \"fixture_device_messages\") due to 1 previous \
                 error",
            ),
        ),
        // Units with nothing left out, and other lines, as they are.
        (
            "error: could not compile `other` (lib) due to 1 previous error; 1 warning emitted",
            Some("error: could not compile `other` (lib) due to 1 previous error; 1 warning emitted"),
        ),
        ("warning: unused variable: `x`", Some("warning: unused variable: `x`")),
    ];
    for (line, want) in table {
        assert_eq!(recount(line, &left).as_deref(), *want, "{line}");
    }
}

/// rustc 1.101's notes after E0277 and E0061 (E0061 left out): one code is
/// left, so the list goes and the last note names it; with more left, the
/// list shrinks; a target with nothing left out keeps its notes.
#[test]
fn explain_notes_do_not_name_the_errors_left_out() {
    let gone = |c: &str| c == "E0061";
    let mut e = Explain::default();
    assert_eq!(e.note("Some errors have detailed explanations: E0061, E0277.", gone), None);
    assert_eq!(
        e.note("For more information about an error, try `rustc --explain E0061`.", gone).as_deref(),
        Some("For more information about this error, try `rustc --explain E0277`.")
    );
    let mut e = Explain::default();
    assert_eq!(
        e.note("Some errors have detailed explanations: E0061, E0277, E0425.", gone).as_deref(),
        Some("Some errors have detailed explanations: E0277, E0425.")
    );
    assert_eq!(
        e.note("For more information about an error, try `rustc --explain E0061`.", gone).as_deref(),
        Some("For more information about an error, try `rustc --explain E0277`.")
    );
    let mut e = Explain::default();
    assert_eq!(e.note("For more information about this error, try `rustc --explain E0061`.", gone), None);
    let keep = "For more information about this error, try `rustc --explain E0277`.";
    assert_eq!(Explain::default().note(keep, gone).as_deref(), Some(keep));
}
