use super::*;

fn parse(s: &str) -> ModelRef {
    ModelRef::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn parses_the_three_forms() {
    let r = parse("bartowski/LLaDA-8B-Instruct-GGUF:Q4_K_M");
    assert_eq!(r.repo(), "bartowski/LLaDA-8B-Instruct-GGUF");
    assert_eq!(r.selector(), &Selector::Quant("Q4_K_M".into()));

    let r = parse("owner/repo/sub/dir/model-q8_0.GGUF");
    assert_eq!(r.repo(), "owner/repo");
    assert_eq!(
        r.selector(),
        &Selector::File("sub/dir/model-q8_0.GGUF".into())
    );

    let r = parse("owner/repo.v2");
    assert_eq!(r.repo(), "owner/repo.v2");
    assert_eq!(r.selector(), &Selector::Only);
}

#[test]
fn hf_prefix_is_optional_and_marks_arguments() {
    assert_eq!(parse("hf:owner/repo:Q8_0"), parse("owner/repo:Q8_0"));
    assert!(ModelRef::from_hf_arg("models/x.gguf").is_none());
    assert!(ModelRef::from_hf_arg("/abs/hf:x.gguf").is_none());
    let r = ModelRef::from_hf_arg("hf:owner/repo:Q8_0")
        .unwrap()
        .unwrap();
    assert_eq!(r.selector(), &Selector::Quant("Q8_0".into()));
    assert!(ModelRef::from_hf_arg("hf:nonsense").unwrap().is_err());
}

#[test]
fn display_is_what_lacuna_pull_takes() {
    for s in ["owner/repo", "owner/repo:Q4_K_M", "owner/repo/a/b.gguf"] {
        assert_eq!(parse(s).to_string(), s);
        assert_eq!(parse(&format!("hf:{s}")).to_string(), s);
    }
}

#[test]
fn bad_references_are_typed_errors() {
    for s in [
        "",
        "hf:",
        "repo-only",
        "/repo",
        "owner/",
        "owner/:Q4",
        "owner/repo:",
        "owner/repo:Q4 K",
        "owner/repo/",
        "owner/repo/model.bin",
        "owner/repo/../x.gguf",
        "owner/repo/a//x.gguf",
        "owner/repo/./x.gguf",
        "owner/repo/a\\x.gguf",
        "own er/repo",
        "../repo",
        "owner/re--po:Q4",
        "owner/répo:Q4",
        "owner/repo:Q4/x.gguf",
    ] {
        match ModelRef::parse(s) {
            Err(Error::InvalidReference { reference, .. }) => assert_eq!(reference, s),
            other => panic!("{s:?} gave {other:?}"),
        }
    }
}
