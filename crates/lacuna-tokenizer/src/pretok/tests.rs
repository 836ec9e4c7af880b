use super::*;

#[test]
fn every_supported_name_resolves_to_itself() {
    for p in SUPPORTED {
        assert_eq!(PreTokenizer::from_name(p.name).unwrap(), *p);
    }
}

#[test]
fn unknown_name_is_an_error_naming_it() {
    let err = PreTokenizer::from_name("gpt2").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("\"gpt2\""), "{msg}");
    assert!(msg.contains("gpt-2"), "{msg}");
}

#[test]
fn llama_bpe_ignores_merges_and_adds_bos() {
    let p = PreTokenizer::from_name("llama-bpe").unwrap();
    assert!(p.ignore_merges && p.add_bos && p.clean_spaces);
    let q = PreTokenizer::from_name("qwen2").unwrap();
    assert!(!q.ignore_merges && !q.add_bos && !q.clean_spaces);
}

#[test]
fn every_regex_compiles() {
    for p in SUPPORTED {
        for r in p.kind.regexes() {
            tokenizers::pre_tokenizers::split::Split::new(
                tokenizers::pre_tokenizers::split::SplitPattern::Regex((*r).to_owned()),
                tokenizers::SplitDelimiterBehavior::Isolated,
                false,
            )
            .unwrap();
        }
    }
}
