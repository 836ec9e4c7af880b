//! The denoising loop of diffusion language models and its remasking strategies (LLaDA,
//! Dream, Fast-dLLM parallel decoding), written against a small `Denoiser` trait so that it
//! knows no model.
