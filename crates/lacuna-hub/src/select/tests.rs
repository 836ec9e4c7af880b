use super::*;

fn files(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn quant(q: &str) -> Selector {
    Selector::Quant(q.into())
}

const REPO: &[&str] = &[
    "README.md",
    ".gitattributes",
    "LLaDA-8B-Instruct-Q4_K_M.gguf",
    "LLaDA-8B-Instruct-Q4_K_S.gguf",
    "LLaDA-8B-Instruct-Q8_0.gguf",
    "LLaDA-8B-Instruct-IQ4_XS.gguf",
    "llada-8b-instruct.f16.gguf",
];

#[test]
fn quant_matches_a_delimited_part_case_insensitively() {
    let f = files(REPO);
    assert_eq!(select_file("o/r", &f, &quant("q4_k_m")).unwrap(), REPO[2]);
    assert_eq!(select_file("o/r", &f, &quant("Q8_0")).unwrap(), REPO[4]);
    assert_eq!(select_file("o/r", &f, &quant("F16")).unwrap(), REPO[6]);
    // IQ4_XS is not Q4_XS: the part must start at a delimiter.
    assert!(matches!(
        select_file("o/r", &f, &quant("Q4_XS")),
        Err(Error::QuantNotFound { files, .. }) if files.len() == 5
    ));
    assert_eq!(select_file("o/r", &f, &quant("iq4_xs")).unwrap(), REPO[5]);
}

#[test]
fn a_prefix_quant_is_ambiguous_unless_one_file_matches_exactly() {
    let f = files(REPO);
    match select_file("o/r", &f, &quant("Q4_K")) {
        Err(Error::AmbiguousQuant { matches, quant, .. }) => {
            assert_eq!(quant, "Q4_K");
            assert_eq!(matches, files(&REPO[2..4]));
        }
        other => panic!("{other:?}"),
    }
    let f = files(&["m-Q4_K.gguf", "m-Q4_K_M.gguf"]);
    assert_eq!(
        select_file("o/r", &f, &quant("Q4_K")).unwrap(),
        "m-Q4_K.gguf"
    );
    let f = files(&["m-Q4_K_M.gguf"]);
    assert_eq!(
        select_file("o/r", &f, &quant("Q4_K")).unwrap(),
        "m-Q4_K_M.gguf"
    );
}

#[test]
fn only_and_file_selectors() {
    let one = files(&["README.md", "sub/model.gguf"]);
    assert_eq!(
        select_file("o/r", &one, &Selector::Only).unwrap(),
        "sub/model.gguf"
    );
    assert!(matches!(
        select_file("o/r", &files(REPO), &Selector::Only),
        Err(Error::QuantRequired { files, .. }) if files.len() == 5
    ));
    let file = Selector::File("LLaDA-8B-Instruct-Q8_0.gguf".into());
    assert_eq!(select_file("o/r", &files(REPO), &file).unwrap(), REPO[4]);
    let missing = Selector::File("nope.gguf".into());
    assert!(matches!(
        select_file("o/r", &files(REPO), &missing),
        Err(Error::FileNotFound { file, .. }) if file == "nope.gguf"
    ));
    assert!(matches!(
        select_file("o/r", &files(&["README.md"]), &quant("Q8_0")),
        Err(Error::NoGguf { .. })
    ));
}

#[test]
fn split_ggufs_are_refused_naming_every_part() {
    let f = files(&[
        "big-Q4_K_M-00001-of-00002.gguf",
        "big-Q4_K_M-00002-of-00002.gguf",
        "big-Q8_0.gguf",
    ]);
    for sel in [
        quant("Q4_K_M"),
        Selector::File("big-Q4_K_M-00002-of-00002.gguf".into()),
    ] {
        match select_file("o/r", &f, &sel) {
            Err(Error::SplitGguf { parts, .. }) => assert_eq!(parts, f[..2].to_vec()),
            other => panic!("{other:?}"),
        }
    }
    let only_split = f[..2].to_vec();
    assert!(matches!(
        select_file("o/r", &only_split, &Selector::Only),
        Err(Error::SplitGguf { .. })
    ));
    assert_eq!(
        select_file("o/r", &f, &quant("q8_0")).unwrap(),
        "big-Q8_0.gguf"
    );
}
