"""Peak memory of AutoModel's MaskedCrossEntropy on one GPU, with and without fp32_upcast.

Reimplements nemo_automodel/components/loss/masked_ce.py (MaskedCrossEntropy.forward: logits
viewed (N, V), optional logits.float(), F.cross_entropy(reduction="sum") / tokens) on bf16
logits that stand for the lm_head output, and records, per case, the bytes allocated above the
logits themselves at the peak of forward + backward (torch.cuda.max_memory_allocated), divided
by tokens x vocab: the loss's bytes per logit. Writes one JSON line per case to stdout.
Usage: python tools/measure/loss_memory.py > tests/data/measured/h200_loss_memory.jsonl
"""
import json
import sys

import torch
import torch.nn.functional as F


def masked_cross_entropy(logits, labels, upcast, num_label_tokens):
    """MaskedCrossEntropy.forward without a mask: the fp32 copy is a local, as in the module,
    so it is freed when forward returns (autograd saves log_softmax's output, not its input)."""
    logits = logits.view(-1, logits.size(-1))
    if upcast:
        logits = logits.float()
    return F.cross_entropy(logits, labels.view(-1), reduction="sum") / num_label_tokens


def case(tokens, vocab, upcast):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    logits = torch.randn(tokens, vocab, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, vocab, (tokens,), device="cuda")
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()  # logits + labels
    torch.cuda.reset_peak_memory_stats()
    loss = masked_cross_entropy(logits, labels, upcast, tokens)
    fwd_peak = torch.cuda.max_memory_allocated() - base
    loss.backward()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    out = {"tokens": tokens, "vocab": vocab, "fp32_upcast": upcast, "logits_bytes": 2 * tokens * vocab,
           "peak_above_logits": peak, "fwd_peak_above_logits": fwd_peak,
           "bytes_per_logit": peak / (tokens * vocab), "fwd_bytes_per_logit": fwd_peak / (tokens * vocab)}
    del logits, labels, loss
    return out


def main():
    env = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(),
           "script": "tools/measure/loss_memory.py"}
    print(json.dumps({"environment": env}))
    for tokens, vocab in [(4096, 151936), (8192, 201088), (8192, 129280), (16384, 128256)]:
        for upcast in (True, False):
            print(json.dumps(case(tokens, vocab, upcast)))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
