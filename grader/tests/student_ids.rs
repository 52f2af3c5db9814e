//! Students whose folder names the old ids merged ("José" and "Josè" were both `Jos_`; "a b" was
//! `a_b`, like the folder "a_b") stay apart in the journal `grade` resumes from and in
//! `grades.csv`. No GPU and no nvcc: the results are written by hand.

use std::collections::BTreeSet;

use grader::class::journal::Journal;
use grader::class::roster;
use grader::plans::grade::{ClassInfo, PairResult, PairState};
use grader::report::gradebook::{Csv, Exporter, Gradebook};

const NAMES: [&str; 6] = ["José", "Josè", "a b", "a_b", "Zoë, \"Z\"", "日本"];

fn result(student: &str, points: f64) -> PairResult {
    PairResult {
        student: student.into(),
        exercise: "03-race".into(),
        fingerprint: format!("fp-{student}"),
        state: PairState::Graded,
        points,
        max: 100.0,
        stages: Vec::new(),
        flags: Vec::new(),
        steps: Vec::new(),
        findings: Vec::new(),
        speed: None,
        gpu: None,
        device: None,
        disk_bytes: None,
        wall_s: 0.0,
    }
}

#[test]
fn students_the_old_ids_merged_get_a_journal_key_and_a_grades_row_each() {
    let class = tempfile::tempdir().unwrap();
    for n in NAMES {
        std::fs::create_dir(class.path().join(n)).unwrap();
    }
    let roster = roster::discover(class.path()).unwrap();
    assert_eq!(roster.students.len(), NAMES.len());

    // The journal: one key per student, kept across a reopening (a resumed `grade`).
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("journal.jsonl");
    let mut results = Vec::new();
    {
        let mut journal = Journal::<PairResult>::open(&path, false).unwrap();
        for (i, s) in roster.students.iter().enumerate() {
            let r = result(&s.id, 10.0 * i as f64);
            journal.record(r.clone()).unwrap();
            results.push(r);
        }
    }
    let journal = Journal::<PairResult>::open(&path, false).unwrap();
    assert_eq!(journal.dropped, 0);
    assert_eq!(
        journal.entries.len(),
        NAMES.len(),
        "{:?}",
        journal.entries.keys()
    );
    for (i, s) in roster.students.iter().enumerate() {
        assert!(journal.has(&s.id, "03-race", &format!("fp-{}", s.id)));
        assert_eq!(
            journal.entries[&(s.id.clone(), "03-race".to_string())].points,
            10.0 * i as f64
        );
    }
    drop(journal);

    // grades.csv: a row per student, the id in `Student`, the exact name in `Name`.
    let info = ClassInfo {
        submissions: class.path().to_path_buf(),
        roster: roster.clone(),
        exercises: vec!["03-race".into()],
        secret: String::new(),
    };
    Csv.export(&Gradebook::new(&info, &results), out.path())
        .unwrap();
    let mut reader = csv::Reader::from_path(out.path().join("grades.csv")).unwrap();
    let header = reader.headers().unwrap().clone();
    assert_eq!(
        header.iter().take(4).collect::<Vec<_>>(),
        ["Student", "Name", "SID", "Email"]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), NAMES.len());
    let ids: BTreeSet<&str> = rows.iter().map(|r| &r[0]).collect();
    let names: BTreeSet<&str> = rows.iter().map(|r| &r[1]).collect();
    assert_eq!(ids.len(), NAMES.len(), "{ids:?}");
    assert_eq!(
        names,
        NAMES.into_iter().collect::<BTreeSet<_>>(),
        "the names exactly, CSV-quoted where needed"
    );
    for (i, s) in roster.students.iter().enumerate() {
        let row = rows.iter().find(|r| &r[0] == s.id.as_str()).unwrap();
        assert_eq!(&row[1], s.name.as_str());
        assert_eq!(
            &row[header.iter().position(|h| h == "03-race").unwrap()],
            format!("{}", 10 * i).as_str()
        );
    }
}
