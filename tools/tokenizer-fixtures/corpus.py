#!/usr/bin/env python3
"""Writes the tokenizer parity corpus: >= 300 strings chosen to break tokenizers.

Hand-written cases cover each hazard once; generated cases (seeded, deterministic) add
volume: whitespace runs, digit runs, mixed scripts, special-token text inside prose.
Usage: corpus.py OUT.json
"""
import json
import random
import sys

SPECIALS = ["<|endoftext|>", "<|startoftext|>", "<|mdm_mask|>", "<|im_start|>", "<|im_end|>",
            "<|eot_id|>", "<tool>", "<s>", "</s>", "<unk>", "<mask>"]

HAND = [
    "", " ", "  ", "\t", "\n", "\r\n", " \n ", "\n\n\n", "a", "A", "Hello", "Hello world",
    " Hello world", "Hello  world", "Hello   world ", "hello\tworld", "hello\n\nworld",
    "Hello, world! How are you?", "I'm fine, you're great, they've left, we'll see, he'd go, it's ok",
    "I'M LOUD, YOU'RE LOUD, THEY'VE GONE, WE'LL, HE'D, IT'S", "don't won't can't shouldn't",
    "'s 't 're 've 'm 'll 'd", "''quoted'' \"double\" `back`", "rock 'n' roll", "O'Neil's cat",
    "1", "12", "123", "1234", "12345", "123456", "1234567", "3.14159", "1,000,000", "2024-05-01",
    "0x1F600", "1e-9", "+1 (555) 123-4567", "99.9%", "$100.00", "€50", "¥1000", "£3", "₹500",
    "12abc34def", "abc123def456", "٣٤٥ ١٢٣", "①②③", "Ⅻ ⅻ", "½ ¾ ⅞", "𝟘𝟙𝟚𝟛",
    "Grüße aus München", "naïve café résumé", "Ångström", "ÆØÅ æøå", "Straße", "İstanbul ıi",
    "Привет, мир!", "Съешь же ещё этих мягких французских булок", "Γειά σου Κόσμε",
    "שלום עולם", "مرحبا بالعالم", "سلام دنیا", "नमस्ते दुनिया", "হ্যালো বিশ্ব", "வணக்கம் உலகம்",
    "สวัสดีชาวโลก", "ສະບາຍດີ", "မင်္ဂလာပါ", "ជំរាបសួរ", "안녕하세요 세계", "こんにちは世界", "カタカナ ひらがな 漢字",
    "你好，世界！", "我爱北京天安门。", "繁體中文測試", "ｆｕｌｌｗｉｄｔｈ　ｓｐａｃｅ", "ﾊﾝｶｸｶﾀｶﾅ",
    "Ελληνικά και English mixed", "English и русский вперемешку", "日本語とEnglishのmix",
    "e\u0301", "a\u0300\u0301\u0302\u0303", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L\u0368\u0367\u0369\u0358\u0320G\u0311\u0357\u030e\u0305\u035b\u0341\u0334\u033b\u0348\u034d\u0354\u0339O\u0342\u030c\u030c\u0358\u0328\u0335\u0339\u033b\u031d\u0333",
    "\u0915\u094d\u0937", "n\u0303", "\u1100\u1161\u11a8", "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd",
    "😀", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇺🇸🇫🇷🇯🇵", "❤️", "❤", "☕️ coffee", "🤖 robots 🤖",
    "emoji in text 🎉 party", "👩🏾‍💻 codes", "🧑‍🤝‍🧑", "1️⃣2️⃣3️⃣", "#️⃣", "©®™", "★☆✓✗",
    "\u200b", "zero\u200bwidth", "a\u200db", "a\u200cb", "\ufeffBOM", "soft\u00adhyphen", "nbsp\u00a0here",
    "thin\u2009space", "ideo\u3000space", "line\u2028sep", "para\u2029sep", "nel\u0085char",
    "tab\there\tand\tthere", "\t\tindented", "    four spaces", "        eight spaces",
    "trailing   ", "   leading", " \t \t mixed", "a\u000bb\u000cc", "\r", "\r\r\n\n",
    "def foo(x):\n    return x * 2\n", "fn main() {\n    println!(\"hi\");\n}\n",
    "for (int i = 0; i < n; ++i) { a[i] += b[i]; }", "if (a && b || !c) { return -1; }",
    "x = {'key': [1, 2, 3], \"k2\": None}", "<div class=\"a\">Hi &amp; bye</div>",
    "SELECT * FROM users WHERE id = 42;", "git commit -m \"fix: bug\" && git push",
    "http://example.com/path?q=1&r=2#frag", "user@example.com", "C:\\Users\\name\\file.txt",
    "#include <stdio.h>", "/* comment */ // line", "$ echo $HOME | grep -v ~", "a->b::c<d>::e",
    "λx.x + 1", "∀x∈ℝ: x² ≥ 0", "∑_{i=1}^{n} i = n(n+1)/2", "E = mc²", "H₂O", "→ ← ↑ ↓ ⇒",
    "...", "…", "!!!???", "?!", "--", "—", "–", "___", "***bold***", "~~strike~~", "#hashtag",
    "@mention", "a.b.c", "a,b,c", "(((nested)))", "[[]]", "{{}}", "<<>>", "||", "&&",
    "<|endoftext|>", "<|endoftext|><|endoftext|>", "text<|endoftext|>text", " <|endoftext|> ",
    "Hello <|im_start|>user\nHi<|im_end|>", "<|im_start|>system\nYou are helpful.<|im_end|>\n",
    "<|mdm_mask|><|mdm_mask|><|mdm_mask|>", "The answer is <|mdm_mask|>.", "<|mdm_mask|> <|mdm_mask|>",
    "<tool>call()</tool>", "a<tool>b", " <tool> ", "<s>", "</s>", "<s> hello </s>", "<unk>",
    "<|endoftext", "endoftext|>", "<|end", "<|eot_id|>done", "<|startoftext|>Hi", "<mask> tok",
    "<|im_start|><|im_end|>", "<|<|endoftext|>|>", "<<|im_end|>>",
    "\\n not a newline", "\\u0041", "%s %d %%", "{{ jinja }}", "{% if x %}y{% endif %}",
    "\x00null", "bell\x07", "esc\x1b[0m", "del\x7f", "\x01\x02\x03",
    "\ud7ff", "\ue000 private", "\uffff", "\U0001F9FF", "\U00010000", "\U0010FFFD", "𐍈 gothic",
    "𓀀 hieroglyph", "\U000E0041 tag char",
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "ab" * 30, "the the the the the the the the", "..." * 10, "=" * 40, "-" * 33,
    "In the beginning God created the heaven and the earth.",
    "And God said, Let there be light: and there was light.",
    "To be, or not to be, that is the question:",
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG!",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    "A long sentence with many words that goes on and on and on, with commas, semicolons; colons: and dashes - to test.",
]


def generated(rng):
    out = []
    ws = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "   \n", "\n "]
    words = ["hello", "world", "Lacuna", "token", "diffusion", "mask", "über", "naïve", "мир",
             "世界", "テスト", "🙂", "42", "x", "I'm", "they're", "café", "a1b2", "ÆØ", "ß"]
    for i in range(60):
        n = rng.randint(2, 8)
        parts = [rng.choice(words) + rng.choice(ws) for _ in range(n)]
        out.append("".join(parts))
    for i in range(30):
        n = rng.randint(1, 40)
        out.append("".join(rng.choice("0123456789") for _ in range(n)))
    for i in range(25):
        n = rng.randint(1, 12)
        out.append("".join(rng.choice([" ", "\t", "\n", "\r", "\u00a0", "\u2003"]) for _ in range(n)) + rng.choice(["", "x", "word", "。"]))
    for i in range(30):
        s = rng.choice(SPECIALS)
        pre = rng.choice(["", " ", "text", "text ", "\n", "é"])
        post = rng.choice(["", " ", "more", " more", "\n", "!"])
        out.append(pre + s + post + rng.choice(SPECIALS) * rng.randint(0, 2))
    for i in range(25):
        n = rng.randint(1, 10)
        cps = []
        for _ in range(n):
            block = rng.choice([(0x20, 0x7e), (0xa0, 0x24f), (0x370, 0x3ff), (0x400, 0x4ff),
                                (0x590, 0x6ff), (0x900, 0x97f), (0x3040, 0x30ff), (0x4e00, 0x4eff),
                                (0xac00, 0xacff), (0x1f300, 0x1f64f), (0x300, 0x36f), (0x2000, 0x206f)])
            cps.append(chr(rng.randint(*block)))
        out.append("".join(cps))
    for i in range(15):
        out.append(" ".join(f"{rng.randint(0, 10**rng.randint(1, 9))}" for _ in range(rng.randint(2, 6))))
    return out


def main():
    rng = random.Random(20260601)
    cases = HAND + generated(rng)
    seen, uniq = set(), []
    for c in cases:
        if c not in seen:
            seen.add(c)
            uniq.append(c)
    # no lone surrogates: every case must be valid UTF-8
    for c in uniq:
        c.encode("utf-8")
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(uniq, f, ensure_ascii=False, indent=0)
    print(f"{len(uniq)} strings -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
