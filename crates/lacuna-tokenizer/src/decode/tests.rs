use super::*;

fn clean(s: &str) -> String {
    let mut v = s.as_bytes().to_vec();
    clean_spaces(&mut v);
    String::from_utf8(v).unwrap()
}

#[test]
fn clean_spaces_matches_llama_cpp_passes() {
    assert_eq!(clean("Hello , world !"), "Hello, world!");
    assert_eq!(clean("a ? b . c"), "a? b. c");
    assert_eq!(clean("rock ' n"), "rock'n");
    assert_eq!(
        clean("it 's I 'm we 're they 've"),
        "it's I'm we're they've"
    );
    assert_eq!(clean("don 't he 'd we 'll"), "don 't he 'd we 'll");
    assert_eq!(clean(" ,"), ",");
    assert_eq!(clean(""), "");
    // the NUL llama.cpp writes over the skipped space stops a second match
    assert_eq!(clean("a ' ' b"), "a'' b");
}

#[test]
fn byte_level_map_is_a_bijection_over_256_bytes() {
    let map = byte_level_inverse();
    assert_eq!(map.len(), 256);
    let mut bytes: Vec<u8> = map.values().copied().collect();
    bytes.sort_unstable();
    bytes.dedup();
    assert_eq!(bytes.len(), 256);
    assert_eq!(map[&'Ġ'], b' ');
    assert_eq!(map[&'Ċ'], b'\n');
    assert_eq!(map[&'a'], b'a');
}

#[test]
fn unmapped_byte_level_char_is_rendered_like_llama_cpp() {
    let mut out = Vec::new();
    byte_level_decode("a€", &mut out);
    assert_eq!(String::from_utf8(out).unwrap(), "a[UNK_BYTE_0xe282aca€]");
}
