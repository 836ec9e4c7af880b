//! The attention kernel's head widths, as the CUDA backend checks them once at load.

use lacuna_cuda::AttnArgs;

#[test]
fn attention_takes_multiples_of_32_up_to_256() {
    for hd in [32, 64, 96, 128, 160, 256] {
        assert!(AttnArgs::supports_head_dim(hd), "{hd}");
    }
    for hd in [0, 16, 80, 100, 288, 512] {
        assert!(!AttnArgs::supports_head_dim(hd), "{hd}");
    }
}
