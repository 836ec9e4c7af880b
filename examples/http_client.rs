//! Call `lacuna serve` with a plain HTTP/1.1 client (std only): a chat completion, then the
//! same request streamed. With `LACUNA_URL=127.0.0.1:8080` (and optionally `LACUNA_MODEL`)
//! it calls a running server; otherwise it starts one in-process over the demo model.
//! `cargo run -p lacuna-examples --example http_client`

use std::io::{Read, Write};
use std::net::TcpStream;

fn post(addr: &str, path: &str, body: &serde_json::Value) -> std::io::Result<String> {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr)?;
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    s.read_to_string(&mut response)?;
    Ok(response)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (addr, model, _server) = match std::env::var("LACUNA_URL") {
        Ok(url) => {
            let model = std::env::var("LACUNA_MODEL").unwrap_or_else(|_| "lacuna-demo".into());
            (url.trim_start_matches("http://").to_string(), model, None)
        }
        Err(_) => {
            let runtime = tokio::runtime::Runtime::new()?;
            let engine = lacuna::Engine::demo(&lacuna::EngineOptions::default())?;
            let server = lacuna_server::Server::new(
                lacuna::SharedEngine::new(engine),
                lacuna_server::ServerConfig::new("lacuna-demo"),
            );
            let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
            let addr = listener.local_addr()?.to_string();
            let router = server.router();
            runtime.spawn(lacuna_server::serve_router(listener, router));
            (addr, "lacuna-demo".to_string(), Some(runtime))
        }
    };
    let mut request = serde_json::json!({
        "model": model,
        "messages": [{"role": "user", "content": "Who made the heaven?"}],
        "max_tokens": 32,
        "diffusion": {"steps": 8},
    });
    let response = post(&addr, "/v1/chat/completions", &request)?;
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default();
    let json: serde_json::Value = serde_json::from_str(body)?;
    println!("answer: {}", json["choices"][0]["message"]["content"]);
    println!("usage:  {}", json["usage"]);

    request["stream"] = true.into();
    let response = post(&addr, "/v1/chat/completions", &request)?;
    print!("streamed:");
    // SSE frames: `data: {chunk}` lines (chunked transfer framing lines are skipped).
    for line in response.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if line == "[DONE]" {
            break;
        }
        let chunk: serde_json::Value = serde_json::from_str(line)?;
        if let Some(text) = chunk["choices"][0]["delta"]["content"].as_str() {
            print!(" [{text}]");
        }
    }
    println!();
    Ok(())
}
