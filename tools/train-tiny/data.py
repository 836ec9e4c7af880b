"""Training and validation sequences cut from the verse list `corpus.py` writes.

Two kinds of sequence, both LLaDA's:
- pretraining text: BOS, whole consecutive verses from a random starting verse (same book,
  same split) while they fit, EOS, then EOS padding to the sequence length; every position
  but BOS may be masked;
- chat (LLaDA's SFT layout, with LLaDA-Instruct's turn markers): BOS, a user turn holding
  one verse, an assistant turn holding the verses that follow, EOT, EOS padding; only the
  response (with its EOT and the padding) may be masked, the prompt never is.
EOS padding is what lets generation stop: the model learns to fill the rest of the canvas
with EOS once the passage is done.

A third kind, `packed` (LLaDA's actual pretraining layout: documents concatenated, EOS only
between them), fills the whole sequence with text: BOS, consecutive verses from a random
start (EOS where a book ends), cut at the sequence length. Trained on padded text only, the
model learns that EOS is likely anywhere past the first few words of a short canvas (it
cannot tell where a passage ends), and low-confidence remasking then commits EOS first.
"""
import json

import numpy as np


class Corpus:
    def __init__(self, verses_path, tokenizer_json, split):
        with open(verses_path) as f:
            verses = json.load(f)
        with open(tokenizer_json) as f:
            vocab = json.load(f)["model"]["vocab"]
        added = {}
        with open(tokenizer_json) as f:
            for t in json.load(f)["added_tokens"]:
                added[t["content"]] = t["id"]
        self.bos = added["<|startoftext|>"]
        self.eos = added["<|endoftext|>"]
        self.eot = added["<|eot_id|>"]
        self.sh = added["<|start_header_id|>"]
        self.eh = added["<|end_header_id|>"]
        self.mask = added["<|mdm_mask|>"]
        self.verses = verses
        # Verses that may start a passage: in `split`, and the passage stays in one book.
        self.split = split
        self.starts = [i for i, v in enumerate(verses) if v["split"] == split]
        self.vocab = vocab

    def header(self, role_ids, nl_ids):
        return [self.sh] + role_ids + [self.eh] + nl_ids

    def same_run(self, i, j):
        a, b = self.verses[i], self.verses[j]
        return b["split"] == self.split and a["book"] == b["book"]

    def passage(self, rng, room, first=None):
        """Token ids of consecutive verses (first without, others with a leading space)
        fitting in `room` tokens, and the index after the last verse."""
        for _ in range(100):
            i = first if first is not None else self.starts[rng.integers(len(self.starts))]
            ids = list(self.verses[i]["ids"])
            if len(ids) <= room:
                break
            if first is not None:
                return None, i
        else:
            return None, i
        j = i + 1
        while j < len(self.verses) and self.same_run(i, j):
            nxt = self.verses[j]["ids_sp"]
            if len(ids) + len(nxt) > room:
                break
            ids += nxt
            j += 1
        return ids, j

    def plain(self, rng, length):
        ids, _ = self.passage(rng, length - 2)
        seq = [self.bos] + ids + [self.eos]
        seq += [self.eos] * (length - len(seq))
        eligible = [0] + [1] * (length - 1)
        return seq, eligible

    def packed(self, rng, length):
        i = self.starts[rng.integers(len(self.starts))]
        seq = [self.bos] + list(self.verses[i]["ids"])
        j = i + 1
        while len(seq) < length and j < len(self.verses):
            v = self.verses[j]
            if v["split"] == self.split:
                if v["book"] != self.verses[i]["book"]:
                    seq.append(self.eos)
                    seq += v["ids"]
                else:
                    seq += v["ids_sp"]
                i = j
            j += 1
        seq = seq[:length]
        seq += [self.eos] * (length - len(seq))
        eligible = [0] + [1] * (length - 1)
        return seq, eligible

    def fill_from(self, j, room):
        """Consecutive verses from verse `j` (with leading spaces, same split; EOS where a
        book ends) cut to exactly `room` tokens."""
        out, book = [], self.verses[j]["book"]
        while len(out) < room and j < len(self.verses):
            v = self.verses[j]
            if v["split"] == self.split:
                if v["book"] != book:
                    out.append(self.eos)
                    book = v["book"]
                out += v["ids_sp"] if out else v["ids"]
            j += 1
        out = out[:room]
        return out + [self.eos] * (room - len(out))

    def chat_prompt(self, rng, user_ids, asst_ids, nl_ids):
        """A random verse `i` that has a successor in its book, as a user turn followed by
        the assistant header: `(i, prompt ids)`, or None when the draw does not qualify."""
        i = self.starts[rng.integers(len(self.starts))]
        if i + 1 >= len(self.verses) or not self.same_run(i, i + 1):
            return None
        return i, ([self.bos] + self.header(user_ids, nl_ids) + self.verses[i]["ids"]
                   + [self.eot] + self.header(asst_ids, nl_ids))

    def chat_packed(self, rng, length, user_ids, asst_ids, nl_ids):
        """The chat layout with the answer filling the canvas (no EOT, no padding): the
        assistant turn continues the passage to the end of the sequence."""
        for _ in range(100):
            drawn = self.chat_prompt(rng, user_ids, asst_ids, nl_ids)
            if drawn is None:
                continue
            i, prompt = drawn
            room = length - len(prompt)
            if room < 8:
                continue
            seq = prompt + self.fill_from(i + 1, room)
            eligible = [0] * len(prompt) + [1] * room
            return seq, eligible
        return self.packed(rng, length)

    def chat(self, rng, length, user_ids, asst_ids, nl_ids):
        for _ in range(100):
            drawn = self.chat_prompt(rng, user_ids, asst_ids, nl_ids)
            if drawn is None:
                continue
            i, prompt = drawn
            room = length - len(prompt) - 2
            if room < 8:
                continue
            resp, _ = self.passage(rng, room, first=i + 1)
            if resp is None:
                continue
            seq = prompt + resp + [self.eot]
            seq += [self.eos] * (length - len(seq))
            eligible = [0] * len(prompt) + [1] * (length - len(prompt))
            return seq, eligible
        return self.plain(rng, length)


def batch(corpus, rng, n, length, chat_frac, chat_ids, packed_frac=0.0):
    """`n` sequences: chat with probability `chat_frac` (its answer filling the canvas with
    probability `packed_frac`, else ending with EOT and padding), else packed text with
    probability `packed_frac`, else padded text."""
    seqs, elig = [], []
    for _ in range(n):
        if rng.random() < chat_frac:
            if rng.random() < packed_frac:
                s, e = corpus.chat_packed(rng, length, *chat_ids)
            else:
                s, e = corpus.chat(rng, length, *chat_ids)
        elif rng.random() < packed_frac:
            s, e = corpus.packed(rng, length)
        else:
            s, e = corpus.plain(rng, length)
        seqs.append(s)
        elig.append(e)
    return np.array(seqs, dtype=np.int64), np.array(elig, dtype=np.float32)
