//! `LACUNA_CPU_PATH` forces the instruction path (checked in child processes, because the
//! active path is decided once per process).

use lacuna_cpu::Path;
use std::process::Command;

/// Child half: asserts what `Path::active` says when the parent set the variables.
#[test]
fn env_override_child() {
    let Ok(want) = std::env::var("LACUNA_TEST_EXPECT_PATH") else {
        return; // run directly, not by `env_override_forces_path`
    };
    assert_eq!(format!("{:?}", Path::active()), want);
}

#[test]
fn env_override_forces_path() {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cases = vec![
        ("scalar".to_owned(), "Ok(Scalar)".to_owned()),
        (
            "sse9".to_owned(),
            "Err(UnknownPath { name: \"sse9\" })".to_owned(),
        ),
    ];
    for p in Path::ALL {
        let want = if p.is_available() {
            format!("Ok({p:?})")
        } else {
            format!("Err(PathUnavailable {{ path: {p:?} }})")
        };
        cases.push((p.name().to_uppercase(), want));
    }
    // A cross-compiled binary under qemu-user cannot start itself again (no binfmt
    // handler): the child half is then only checked natively.
    let reruns = Command::new(&exe)
        .arg("--list")
        .output()
        .is_ok_and(|o| o.status.success());
    if !reruns {
        eprintln!("cannot re-execute {exe:?}: skipped (emulated?)");
        return;
    }
    for (value, want) in cases {
        let out = Command::new(&exe)
            .args(["--exact", "env_override_child", "--test-threads=1"])
            .env("LACUNA_CPU_PATH", &value)
            .env("LACUNA_TEST_EXPECT_PATH", &want)
            .output()
            .expect("spawn test binary");
        assert!(
            out.status.success(),
            "LACUNA_CPU_PATH={value}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
    }
}
