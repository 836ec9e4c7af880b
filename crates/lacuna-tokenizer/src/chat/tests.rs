use super::*;

const LLADA: &str = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

const QWEN: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

fn user(text: &str) -> Vec<ChatMessage> {
    vec![ChatMessage::new("user", text)]
}

#[test]
fn llada_template_renders_bos_trim_and_generation_prompt() {
    let t = ChatTemplate::new(LLADA, "<|startoftext|>", "<|endoftext|>").unwrap();
    let out = t.render(&user("  Hi there \n"), true).unwrap();
    assert_eq!(
        out,
        "<|startoftext|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    let no_prompt = t.render(&user("x"), false).unwrap();
    assert!(no_prompt.ends_with("<|eot_id|>"), "{no_prompt}");
}

#[test]
fn qwen_template_adds_default_system_prompt_once() {
    let t = ChatTemplate::new(QWEN, "", "<|endoftext|>").unwrap();
    let msgs = vec![
        ChatMessage::new("user", "a"),
        ChatMessage::new("assistant", "b"),
        ChatMessage::new("user", "c"),
    ];
    let out = t.render(&msgs, true).unwrap();
    assert_eq!(out.matches("You are a helpful assistant.").count(), 1);
    assert!(out.starts_with("<|im_start|>system\n"));
    assert!(
        out.ends_with("<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n"),
        "{out}"
    );
}

#[test]
fn raise_exception_is_an_error_with_its_message() {
    let src = "{% if messages[0]['role'] != 'user' %}{{ raise_exception('first message must be from the user') }}{% endif %}ok";
    let t = ChatTemplate::new(src, "", "").unwrap();
    assert_eq!(t.render(&user("x"), false).unwrap(), "ok");
    let err = t
        .render(&[ChatMessage::new("system", "s")], false)
        .unwrap_err();
    assert!(matches!(err, Error::Template(_)));
    assert!(
        err.to_string()
            .contains("first message must be from the user"),
        "{err}"
    );
}

#[test]
fn python_string_methods_work_and_unknown_ones_are_named() {
    let t = ChatTemplate::new(
        "{{ messages[0].content.strip().upper() }}{{ messages[0].content.startswith(' a') }}",
        "",
        "",
    )
    .unwrap();
    assert_eq!(t.render(&user(" ab "), false).unwrap(), "ABTrue");
    let t = ChatTemplate::new("{{ messages[0].content.casefold() }}", "", "").unwrap();
    let err = t.render(&user("x"), false).unwrap_err().to_string();
    assert!(err.contains("casefold"), "{err}");
}

#[test]
fn unknown_function_and_syntax_errors_are_typed_errors() {
    let t = ChatTemplate::new("{{ strftime_now('%Y') }}", "", "").unwrap();
    let err = t.render(&user("x"), false).unwrap_err().to_string();
    assert!(err.contains("strftime_now"), "{err}");
    let err = ChatTemplate::new("{% for x in %}", "", "").unwrap_err();
    assert!(matches!(err, Error::Template(_)), "{err}");
}

#[test]
fn loops_expose_loop_variables() {
    let src = "{% for m in messages %}{{ loop.index }}/{{ loop.length }}:{{ m.role }}{% if not loop.last %},{% endif %}{% endfor %}";
    let t = ChatTemplate::new(src, "", "").unwrap();
    let msgs = vec![
        ChatMessage::new("system", "s"),
        ChatMessage::new("user", "u"),
    ];
    assert_eq!(t.render(&msgs, false).unwrap(), "1/2:system,2/2:user");
}
