use super::*;

fn text() -> Prompt {
    Prompt::Text("x".into())
}

fn fast() -> Settings {
    Settings {
        fast: true,
        ..Settings::default()
    }
}

#[test]
fn fast_is_the_dual_cache_except_for_llada2() {
    for arch in [Arch::Llada, Arch::LladaMoe, Arch::Dream] {
        let r = fast().request(text(), arch).unwrap();
        assert_eq!(r.cache, CachePolicy::Dual, "{arch}");
        assert_eq!(r.parallel, Some(ParallelConfig::default()), "{arch}");
        assert_eq!(r.block_length, Some(32), "{arch}");
    }
    // LLaDA2: the exact block cache, its own threshold rule (no Fast-dLLM parallel config).
    let r = fast().request(text(), Arch::Llada2).unwrap();
    assert_eq!(r.cache, CachePolicy::Prefix);
    assert_eq!(r.parallel, None);
    assert_eq!(
        fast().request(text(), Arch::Rnd1),
        Err(SettingsError::FastUnsupported { arch: Arch::Rnd1 })
    );
    // Each part of the preset can still be set on its own.
    let s = Settings {
        cache: Some(CachePolicy::Prefix),
        factor: Some(1.0),
        ..fast()
    };
    let r = s.request(text(), Arch::Llada).unwrap();
    assert_eq!(r.cache, CachePolicy::Prefix);
    assert_eq!(r.parallel.unwrap().rule, ParallelRule::Factor(1.0));
}

#[test]
fn the_request_builder_and_the_settings_agree_on_fast() {
    for arch in Arch::ALL {
        let Ok(from_settings) = fast().request(text(), arch) else {
            continue;
        };
        let built = GenerateRequest::new(text()).fast(arch);
        assert_eq!(built.cache, from_settings.cache, "{arch}");
        assert_eq!(built.parallel, from_settings.parallel, "{arch}");
        assert_eq!(built.block_length, from_settings.block_length, "{arch}");
    }
}

#[test]
fn defaults_follow_the_architecture_and_length() {
    let r = Settings::default().request(text(), Arch::Llada).unwrap();
    assert_eq!((r.gen_length, r.steps, r.block_length), (128, 32, Some(32)));
    let r = Settings::default().request(text(), Arch::Dream).unwrap();
    assert_eq!((r.steps, r.block_length), (32, None));
    let r = Settings::default().request(text(), Arch::Rnd1).unwrap();
    assert_eq!(r.block_length, None);
    let s = Settings {
        gen_length: Some(50),
        ..Settings::default()
    };
    let r = s.request(text(), Arch::Llada).unwrap();
    assert_eq!((r.steps, r.block_length), (12, Some(50)));
    // Steps stay a multiple of the blocks.
    for len in [32, 64, 96, 160, 256] {
        let s = Settings {
            gen_length: Some(len),
            ..Settings::default()
        };
        let r = s.request(text(), Arch::LladaMoe).unwrap();
        assert_eq!(r.steps % (len / 32), 0, "len {len}");
        assert!(r.steps <= len);
    }
    // LLaDA2 counts steps per block.
    let r = Settings::default().request(text(), Arch::Llada2).unwrap();
    assert_eq!(r.steps, Llada2Config::default().steps);
}

#[test]
fn rules_need_parallel_and_come_one_at_a_time() {
    let s = Settings {
        threshold: Some(0.8),
        ..Settings::default()
    };
    let e = s.request(text(), Arch::Llada).unwrap_err();
    assert_eq!(e.setting(), Some("threshold"));
    assert!(e.message(&|n| format!("--{n}")).contains("need --parallel"));
    // LLaDA2's sampler is a threshold rule already.
    let r = s.request(text(), Arch::Llada2).unwrap();
    assert_eq!(r.parallel.unwrap().rule, ParallelRule::Threshold(0.8));
    let s = Settings {
        parallel: true,
        threshold: Some(0.8),
        factor: Some(1.0),
        ..Settings::default()
    };
    assert_eq!(
        s.request(text(), Arch::Llada),
        Err(SettingsError::SeveralRules)
    );
    let s = Settings {
        parallel: true,
        entropy_bound: Some(0.5),
        ..Settings::default()
    };
    let r = s.request(text(), Arch::Dream).unwrap();
    assert_eq!(r.parallel.unwrap().rule, ParallelRule::EntropyBound(0.5));
    assert_eq!(r.block_length, Some(32));
}

#[test]
fn impossible_combinations_name_the_setting() {
    let cases = [
        (
            Settings {
                steps: Some(0),
                ..Settings::default()
            },
            Some("steps"),
        ),
        (
            Settings {
                cfg_scale: Some(1.0),
                ..fast()
            },
            Some("cfg_scale"),
        ),
        (
            Settings {
                max_post_steps: Some(3),
                ..Settings::default()
            },
            Some("max_post_steps"),
        ),
    ];
    for (s, setting) in cases {
        let e = s.request(text(), Arch::Llada).unwrap_err();
        assert_eq!(e.setting(), setting, "{e}");
        assert!(e.to_string().contains('`'), "{e}");
    }
    let e = Settings {
        cfg_scale: Some(1.0),
        ..fast()
    }
    .request(text(), Arch::Llada)
    .unwrap_err()
    .message(&|n| format!("--{}", n.replace('_', "-")));
    assert!(e.contains("--fast") && e.contains("--cfg-scale"), "{e}");
}

#[test]
fn editing_defaults_and_options() {
    let s = Settings {
        editing: true,
        max_post_steps: Some(4),
        ..Settings::default()
    };
    let r = s.request(text(), Arch::Llada2).unwrap();
    let e = r.editing.unwrap();
    assert_eq!((e.threshold, e.max_post_steps), (0.9, 4));
}

#[test]
fn logprobs_pass_through_up_to_twenty() {
    for arch in Arch::ALL {
        let s = Settings {
            logprobs: Some(20),
            ..Settings::default()
        };
        assert_eq!(
            s.request(text(), arch).unwrap().logprobs,
            Some(20),
            "{arch}"
        );
        assert_eq!(
            Settings::default().request(text(), arch).unwrap().logprobs,
            None
        );
        let e = Settings {
            logprobs: Some(21),
            ..Settings::default()
        }
        .request(text(), arch)
        .unwrap_err();
        assert_eq!(e, SettingsError::TooManyLogprobs { requested: 21 });
        assert_eq!(e.setting(), Some("logprobs"));
        assert!(e.to_string().contains("at most 20"), "{e}");
    }
}
