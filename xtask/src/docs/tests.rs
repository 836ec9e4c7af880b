use std::path::Path;

use super::*;

/// A repository with `files` (path, text) written under a temporary root.
fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// `n` characters of prose (words of five letters and a space).
fn prose(n: usize) -> String {
    let mut s: String = "word ".repeat(n / 5 + 1).chars().take(n).collect();
    if s.ends_with(' ') {
        s.pop();
        s.push('x');
    }
    s
}

fn problems(root: &Path, file: &str, text: &str) -> Vec<String> {
    check_file(root, file, text)
        .iter()
        .map(Problem::to_string)
        .collect()
}

#[test]
fn prose_of_a_given_length() {
    for n in [1, 5, 599, 600, 601, 1234] {
        assert_eq!(prose(n).chars().count(), n, "{n}");
    }
}

#[test]
fn a_paragraph_over_the_limit_is_named_by_file_and_line() {
    let dir = repo(&[]);
    let ok = format!("# Title\n\n{}\n", prose(600));
    assert!(problems(dir.path(), "docs/a.md", &ok).is_empty());
    // 601 characters over three lines (joined by spaces), starting on line 3.
    let long = format!(
        "# Title\n\n{}\n{}\n{}\n\nshort\n",
        prose(200),
        prose(200),
        prose(199)
    );
    assert_eq!(
        problems(dir.path(), "docs/a.md", &long),
        ["docs/a.md:3: paragraph of 601 characters, more than 600; split it"]
    );
}

#[test]
fn a_list_item_is_measured_with_its_continuation_lines_alone() {
    let dir = repo(&[]);
    let text = format!(
        "Intro.\n\n- {}\n  {}\n- {}\n1. {}\n",
        prose(400),
        prose(300),
        prose(500),
        prose(10)
    );
    assert_eq!(
        problems(dir.path(), "README.md", &text),
        ["README.md:3: list item of 703 characters, more than 600; split it"]
    );
    let b = blocks(&text);
    let kinds: Vec<(usize, Kind)> = b.iter().map(|b| (b.line, b.kind)).collect();
    assert_eq!(
        kinds,
        [
            (1, Kind::Paragraph),
            (3, Kind::ListItem),
            (5, Kind::ListItem),
            (6, Kind::ListItem)
        ]
    );
}

#[test]
fn code_tables_headings_comments_and_generated_parts_are_not_measured() {
    let dir = repo(&[]);
    let long = prose(700);
    let text = format!(
        "# {long}\n\n```text\n{long}\n```\n\n~~~~\n```\n{long}\n~~~~\n\n| a | b |\n|---|---|\n| {long} | x |\n\n<!--\n{long}\n-->\n\n<!-- bench-headline:begin (generated) -->\n{long}\n<!-- bench-headline:end -->\n\nAfter.\n"
    );
    assert!(problems(dir.path(), "docs/a.md", &text).is_empty());
    // The prose after them is still measured.
    let text = format!("{text}\n{long}\n");
    let found = problems(dir.path(), "docs/a.md", &text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("docs/a.md:26: paragraph of 700"),
        "{found:?}"
    );
}

#[test]
fn the_readme_over_ten_thousand_characters_fails_and_a_guide_does_not() {
    let dir = repo(&[]);
    // 20 paragraphs of 500 characters and a blank line each: 10,020 characters.
    let para = format!("{}\n\n", prose(499));
    let text = para.repeat(20);
    assert_eq!(text.chars().count(), 10_020);
    let found = problems(dir.path(), "README.md", &text);
    assert_eq!(found.len(), 1, "{found:?}");
    // The 10,001st character is on the last paragraph's line, line 39.
    assert!(
        found[0].starts_with("README.md:39: README.md has 10020 characters, more than 10000"),
        "{found:?}"
    );
    assert!(problems(dir.path(), "docs/guide.md", &text).is_empty());
    // Multi-byte characters count once: 100 paragraphs of 98 and two newlines.
    let text = format!("{}\n\n", "×".repeat(98)).repeat(100);
    assert_eq!(text.chars().count(), 10_000);
    assert!(problems(dir.path(), "README.md", &text).is_empty());
}

#[test]
fn a_relative_link_to_a_missing_file_fails() {
    let dir = repo(&[
        ("docs/b.md", "# B\n"),
        ("tools/x/README.md", "# X\n"),
        ("examples/standalone/Cargo.toml", ""),
    ]);
    let text = "See [b](b.md), [x](../tools/x/README.md), [folder](../examples/standalone),\n\
                [web](https://example.com/nope.md) and [mail](mailto:a@b.c).\n\
                \n\
                A [gone](gone.md) link, an ![image](../img/none.png) and\n\
                [a ref]: ../missing.md\n";
    assert_eq!(
        problems(dir.path(), "docs/a.md", text),
        [
            "docs/a.md:4: link to gone.md: docs/gone.md does not exist",
            "docs/a.md:4: link to ../img/none.png: img/none.png does not exist",
            "docs/a.md:5: link to ../missing.md: missing.md does not exist",
        ]
    );
    // From the README, links are relative to the root.
    assert_eq!(
        problems(dir.path(), "README.md", "[b](docs/b.md) [c](docs/c.md)\n"),
        ["README.md:1: link to docs/c.md: docs/c.md does not exist"]
    );
}

#[test]
fn links_in_code_are_not_links_and_links_in_tables_are() {
    let dir = repo(&[]);
    let text =
        "`[x](nope.md)` and ``[y](`nope.md`)``\n\n```md\n[z](nope.md)\n```\n\n| [t](table.md) |\n";
    assert_eq!(
        problems(dir.path(), "README.md", text),
        ["README.md:7: link to table.md: table.md does not exist"]
    );
}

#[test]
fn anchors_are_checked_against_headings() {
    let dir = repo(&[(
        "docs/b.md",
        "# Serving it\n\n## `max_tokens` and the rest\n\n## Notes\n\n## Notes\n\n```\n# not a heading\n```\n",
    )]);
    let text = "# Here: a title\n\n[1](#here-a-title) [2](b.md#serving-it) [3](b.md#max_tokens-and-the-rest) [4](b.md#notes-1)\n\n[5](#nowhere) [6](b.md#not-a-heading)\n";
    assert_eq!(
        problems(dir.path(), "docs/a.md", text),
        [
            "docs/a.md:5: link to #nowhere: docs/a.md has no heading whose anchor is #nowhere",
            "docs/a.md:5: link to b.md#not-a-heading: docs/b.md has no heading whose anchor is #not-a-heading",
        ]
    );
}

#[test]
fn check_lists_every_problem_of_readme_and_docs() {
    let long = prose(650);
    let dir = repo(&[
        (
            "README.md",
            "# R\n\n[guide](docs/guide.md) [gone](docs/gone.md)\n",
        ),
        ("docs/guide.md", &format!("# G\n\n- {long}\n")),
        ("docs/notes.txt", &long),
        ("other/long.md", &long),
    ]);
    let err = check(dir.path()).unwrap_err().to_string();
    assert_eq!(
        err,
        "2 documentation problem(s):\n\
         README.md:3: link to docs/gone.md: docs/gone.md does not exist\n\
         docs/guide.md:3: list item of 652 characters, more than 600; split it"
    );
    std::fs::write(dir.path().join("docs/gone.md"), "# Gone\n").unwrap();
    std::fs::write(dir.path().join("docs/guide.md"), "# G\n\n- short\n").unwrap();
    assert_eq!(check(dir.path()).unwrap(), 3);
}

#[test]
fn link_targets_drop_titles_and_angle_brackets() {
    let text = "[a](one.md \"Title\") [b](<two words.md>) [c](three.md#part) ![d](four.png)\n";
    let targets: Vec<String> = links(text).into_iter().map(|l| l.target).collect();
    assert_eq!(
        targets,
        ["one.md", "two words.md", "three.md#part", "four.png"]
    );
}

/// The committed README and guides keep the rules (as `cargo xtask docs-check` does), so
/// `cargo test` fails when they break.
#[test]
fn the_committed_docs_keep_the_rules() {
    if let Err(err) = check(&crate::repo_root()) {
        panic!("{err:#}");
    }
}
