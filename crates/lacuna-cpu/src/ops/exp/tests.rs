use super::*;

#[test]
fn close_to_f64_exp_over_the_range() {
    let mut worst = 0.0f64;
    let mut x = -87.0f32;
    while x < 88.5 {
        let want = f64::from(x).exp();
        let got = f64::from(exp(x));
        let ulps = (got - want).abs() / (want * f64::from(f32::EPSILON));
        worst = worst.max(ulps);
        x += 0.0137;
    }
    assert!(worst <= 2.0, "worst error {worst} ulp");
}

#[test]
fn edges() {
    assert_eq!(exp(0.0), 1.0);
    assert_eq!(exp(-100.0), 0.0);
    assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp(100.0), f32::INFINITY);
    assert!(exp(f32::NAN).is_nan());
    assert!((exp(1.0) - std::f32::consts::E).abs() <= f32::EPSILON * 3.0);
}
