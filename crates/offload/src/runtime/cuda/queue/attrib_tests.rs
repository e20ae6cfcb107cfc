//! Tests of `attrib`: the decision over a table of locations and
//! candidates, and the checks of several queues over one record.

use super::*;

/// A kernel `app::<name>` of `file`, lines `line..=last_line`.
const fn kernel(name: &'static str, file: &'static str, line: u32, last_line: u32) -> KernelInfo {
    KernelInfo { name, symbol: name, module_path: "app", file, line, last_line, instance: "", params: &[] }
}

static CHURN: KernelInfo = kernel("churn", "src/main.rs", 10, 15);
static PANICS_AT: KernelInfo = kernel("panics_at", "src/main.rs", 20, 28);
/// The same lines as `PANICS_AT`, in another file.
static ELSEWHERE: KernelInfo = kernel("elsewhere", "src/other.rs", 20, 28);
/// Two instances of one generic kernel: the same lines.
static SCALE_F32: KernelInfo = KernelInfo { instance: "f32", ..kernel("scale", "src/main.rs", 30, 36) };
static SCALE_F64: KernelInfo = KernelInfo { instance: "f64", ..kernel("scale", "src/main.rs", 30, 36) };

fn take(name: &str) -> Verdict {
    Verdict::Take(name.into())
}

fn unplaced(names: &str) -> Verdict {
    Verdict::Unplaced(names.into())
}

/// A row of the table: the location, the check's own kernels, the other
/// queues' kernels, and what the check does.
type Row<'a> = ((&'a str, u32), &'a [&'static KernelInfo], &'a [&'static KernelInfo], Verdict);

#[test]
fn a_panic_goes_to_the_check_whose_kernel_contains_its_location() {
    let (c, p, e) = (&CHURN, &PANICS_AT, &ELSEWHERE);
    let (f32_, f64_) = (&SCALE_F32, &SCALE_F64);
    #[rustfmt::skip]
    let table: &[Row<'_>] = &[
        // Issue 11: `churn`'s queue checks first; the panic is in `panics_at`.
        (("src/main.rs", 24), &[c], &[p], Verdict::Leave),
        (("src/main.rs", 24), &[p], &[c], take("app::panics_at")),
        // Exact among several candidates of the check's own.
        (("src/main.rs", 24), &[c, p], &[], take("app::panics_at")),
        (("src/main.rs", 24), &[c, p], &[c], take("app::panics_at")),
        // The first and the last line count; the lines around do not.
        (("src/main.rs", 20), &[c], &[p], Verdict::Leave),
        (("src/main.rs", 28), &[c], &[p], Verdict::Leave),
        (("src/main.rs", 19), &[c], &[p], unplaced("one of app::churn, app::panics_at")),
        (("src/main.rs", 29), &[c], &[p], unplaced("one of app::churn, app::panics_at")),
        // The file counts too.
        (("src/other.rs", 24), &[e], &[p], take("app::elsewhere")),
        (("src/main.rs", 24), &[e], &[p], Verdict::Leave),
        // Outside every kernel (a helper elsewhere): every candidate.
        (("src/helpers.rs", 3), &[c], &[p], unplaced("one of app::churn, app::panics_at")),
        (("src/helpers.rs", 3), &[c], &[], unplaced("app::churn")),
        (("src/helpers.rs", 3), &[], &[p, c], unplaced("one of app::panics_at, app::churn")),
        (("src/helpers.rs", 3), &[], &[], unplaced("<a kernel of another queue or launch>")),
        // A stack overflow: the function's name and line 0.
        (("app::recurse", 0), &[c], &[p], unplaced("one of app::churn, app::panics_at")),
        // The same kernel unchecked on both: the first check takes it.
        (("src/main.rs", 24), &[p], &[p], take("app::panics_at")),
        // Instances of one generic kernel share its lines.
        (("src/main.rs", 31), &[f32_], &[f64_, c], take("one of app::scale::<f32>, app::scale::<f64>")),
        (("src/main.rs", 31), &[c], &[f32_, f64_], Verdict::Leave),
        // A blocking launch of `churn` finds a queued kernel's panic.
        (("src/main.rs", 24), &[c], &[p, f32_], Verdict::Leave),
        (("src/main.rs", 12), &[c], &[p, f32_], take("app::churn")),
        // A queue of `churn` checks while a blocking launch of `panics_at`
        // runs (its kernel among the others): the blocking kernel's panic
        // is left, the queue's own taken, one of neither is unplaced
        // (`Unchecked` keeps that for the blocking launch).
        (("src/main.rs", 24), &[c], &[p], Verdict::Leave),
        (("src/main.rs", 11), &[c], &[p], take("app::churn")),
        (("src/helpers.rs", 3), &[c], &[p], unplaced("one of app::churn, app::panics_at")),
        // ... and with another queue's `scale::<f32>` too.
        (("src/main.rs", 33), &[c], &[p, f32_], Verdict::Leave),
        (("src/main.rs", 24), &[c, f32_], &[p], Verdict::Leave),
    ];
    for (at, this, others, want) in table {
        let names: Vec<String> = this.iter().map(|k| k.path()).collect();
        assert_eq!(attribute(*at, this, others), *want, "{at:?}, this {names:?}");
    }
}

/// A record in `panics_at`'s body, with `message`.
fn in_panics_at(message: &str) -> Option<Recorded> {
    Some(Recorded::at("src/main.rs", 24, message))
}

/// The kernel named and the message of a check's report.
fn seen(r: Option<(String, Recorded)>) -> Option<(String, String)> {
    r.map(|(k, rec)| (k, rec.message().into()))
}

fn some(kernel: &str, message: &str) -> Option<(String, String)> {
    Some((kernel.into(), message.into()))
}

/// Issue 11 as the checks see it: queue 1 runs `churn`, queue 2
/// `panics_at`, and queue 1 checks first. The panic is queue 2's, once.
#[test]
fn a_panic_found_by_another_queue_is_kept_for_its_own() {
    let mut u = Unchecked::default();
    u.note(1, &CHURN);
    u.note(2, &PANICS_AT);
    assert_eq!(seen(u.check(Checker::Queue(1), in_panics_at("bad"))), None);
    assert_eq!(seen(u.check(Checker::Queue(1), None)), None);
    assert_eq!(seen(u.check(Checker::Queue(2), None)), some("app::panics_at", "bad"));
    assert_eq!(seen(u.check(Checker::Queue(2), None)), None, "reported once");
    // Found by its own queue: reported there at once.
    u.note(2, &PANICS_AT);
    assert_eq!(seen(u.check(Checker::Queue(2), in_panics_at("again"))), some("app::panics_at", "again"));
}

/// A blocking launch keeps a queued kernel's panic for its queue, and
/// reports its own.
#[test]
fn a_blocking_launch_keeps_a_queued_kernels_panic_for_its_queue() {
    let mut u = Unchecked::default();
    u.note(2, &PANICS_AT);
    u.note(BLOCKING, &CHURN);
    assert_eq!(seen(u.check(Checker::Blocking, None)), None);
    u.note(BLOCKING, &CHURN);
    assert_eq!(seen(u.check(Checker::Blocking, in_panics_at("bad"))), None);
    u.note(BLOCKING, &CHURN);
    let own = Some(Recorded::at("src/main.rs", 11, "own"));
    assert_eq!(seen(u.check(Checker::Blocking, own)), some("app::churn", "own"));
    assert_eq!(seen(u.check(Checker::Queue(2), None)), some("app::panics_at", "bad"));
}

/// Issue 11 with a blocking launch: a queue's check runs while the
/// blocking kernel `panics_at` does (queue checks no longer wait for it)
/// and finds its panic. The queue does not take it; the blocking launch's
/// own check, after its kernel has finished, reports it.
#[test]
fn a_running_blocking_kernels_panic_is_left_for_its_launch() {
    let mut u = Unchecked::default();
    u.note(1, &CHURN);
    u.note(BLOCKING, &PANICS_AT);
    assert_eq!(seen(u.check(Checker::Queue(1), in_panics_at("bad"))), None);
    assert_eq!(seen(u.check(Checker::Queue(1), None)), None, "nor at its next check");
    assert_eq!(seen(u.check(Checker::Queue(2), None)), None, "nor another queue");
    assert_eq!(seen(u.check(Checker::Blocking, None)), some("app::panics_at", "bad"));
    // The next blocking launch starts clean.
    u.note(BLOCKING, &PANICS_AT);
    assert_eq!(seen(u.check(Checker::Blocking, None)), None);
}

/// While a blocking launch runs, a queue takes a panic in its own kernel's
/// lines; one outside every candidate's lines is kept for the blocking
/// launch (which, before, always checked first), naming every candidate.
#[test]
fn a_queue_takes_its_own_panic_while_a_blocking_launch_runs() {
    let mut u = Unchecked::default();
    u.note(1, &CHURN);
    u.note(BLOCKING, &PANICS_AT);
    let own = Some(Recorded::at("src/main.rs", 12, "own"));
    assert_eq!(seen(u.check(Checker::Queue(1), own)), some("app::churn", "own"));
    u.note(1, &CHURN);
    let helper = Some(Recorded::at("src/helpers.rs", 3, "helper"));
    assert_eq!(seen(u.check(Checker::Queue(1), helper)), None);
    assert_eq!(seen(u.check(Checker::Blocking, None)), some("one of app::churn, app::panics_at", "helper"));
    // Without a blocking launch in flight the queue takes such a panic.
    u.note(1, &CHURN);
    let helper = Some(Recorded::at("src/helpers.rs", 3, "helper"));
    assert_eq!(seen(u.check(Checker::Queue(1), helper)), some("app::churn", "helper"));
}

/// A blocking launch that fails before its check (a fault) is forgotten:
/// a record kept for it alone goes nowhere, one kept for it and a queue
/// stays the queue's, and the next blocking launch finds neither.
#[test]
fn a_blocking_launch_that_failed_is_forgotten() {
    let mut u = Unchecked::default();
    u.note(1, &CHURN);
    u.note(2, &PANICS_AT);
    u.note(BLOCKING, &PANICS_AT);
    assert_eq!(seen(u.check(Checker::Queue(1), in_panics_at("shared"))), None);
    u.forget(BLOCKING);
    assert_eq!(seen(u.check(Checker::Queue(2), None)), some("app::panics_at", "shared"));
    u.note(1, &CHURN);
    u.note(BLOCKING, &PANICS_AT);
    assert_eq!(seen(u.check(Checker::Queue(1), in_panics_at("alone"))), None);
    u.forget(BLOCKING);
    assert_eq!(seen(u.check(Checker::Queue(3), None)), None, "not to an unrelated queue");
    u.note(BLOCKING, &CHURN);
    assert_eq!(seen(u.check(Checker::Blocking, None)), None, "nor to the next blocking launch");
}

/// A queue reports its first error only: a record kept for it comes
/// before one it finds itself later; a second record for the same queues
/// is not kept.
#[test]
fn a_queue_reports_its_oldest_panic_first_and_only_one() {
    let mut u = Unchecked::default();
    u.note(1, &CHURN);
    u.note(2, &PANICS_AT);
    assert_eq!(seen(u.check(Checker::Queue(1), in_panics_at("first"))), None);
    u.note(1, &CHURN);
    assert_eq!(seen(u.check(Checker::Queue(1), in_panics_at("second"))), None);
    assert_eq!(seen(u.check(Checker::Queue(2), in_panics_at("third"))), some("app::panics_at", "first"));
    assert_eq!(seen(u.check(Checker::Queue(2), None)), None);
    assert_eq!(seen(u.check(Checker::Queue(1), None)), None);
}

/// A record kept for a queue whose launches are gone (a fault's report
/// took them) is reported by the next check of any queue that has no
/// error of its own.
#[test]
fn a_kept_panic_whose_queue_has_no_launches_left_goes_to_the_next_check() {
    let mut u = Unchecked::default();
    u.note(1, &CHURN);
    u.note(2, &PANICS_AT);
    u.note(3, &CHURN);
    assert_eq!(seen(u.check(Checker::Queue(1), in_panics_at("bad"))), None);
    assert_eq!(u.take_names(2), "one of app::panics_at, app::churn");
    let own = Some(Recorded::at("src/main.rs", 12, "own"));
    assert_eq!(seen(u.check(Checker::Queue(3), own)), some("app::churn", "own"));
    assert_eq!(seen(u.check(Checker::Queue(4), None)), some("app::panics_at", "bad"));
    assert_eq!(seen(u.check(Checker::Queue(3), None)), None);
}

/// A record in a kernel unchecked on two other queues is kept for both;
/// the first of them checked reports it.
#[test]
fn a_panic_in_a_kernel_of_two_other_queues_goes_to_the_first_checked() {
    let mut u = Unchecked::default();
    u.note(1, &CHURN);
    u.note(2, &PANICS_AT);
    u.note(3, &PANICS_AT);
    assert_eq!(seen(u.check(Checker::Queue(1), in_panics_at("bad"))), None);
    assert_eq!(seen(u.check(Checker::Queue(3), None)), some("app::panics_at", "bad"));
    assert_eq!(seen(u.check(Checker::Queue(2), None)), None);
}
