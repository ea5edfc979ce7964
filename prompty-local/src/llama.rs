//! The Llama network: hyper-parameters and weights from a GGUF file, and the forward pass
//! (RMS norm, rotary embeddings, grouped-query attention over a key/value cache, SiLU-gated
//! feed-forward).
//!
//! The matrix products are candle's quantized ones ([`QMatMul`]); everything else (norms, rope,
//! attention, activations) is plain Rust over `f32` slices, which for one token at a time costs
//! less than building tensors for it.

use crate::gguf::{candle_text, format_error, limits, Gguf};
use crate::Error;
use candle_core::quantized::{GgmlDType, QMatMul, QStorage, QTensor};
use candle_core::{Device, Module, Tensor};
use rayon::prelude::*;
use std::borrow::Cow;
use std::sync::Arc;

/// The architectures this network runs.
pub(crate) const SUPPORTED_ARCHITECTURES: &[&str] = &["llama"];

/// Hyper-parameters of a Llama model.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub dim: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    pub eps: f32,
    pub rope_base: f32,
    pub rope_dim: usize,
    pub context: usize,
    pub vocab: usize,
}

impl Config {
    /// Reads the hyper-parameters of architecture `arch` from the metadata.
    pub fn read(g: &Gguf, arch: &str) -> Result<Config, Error> {
        let key = |k: &str| format!("{arch}.{k}");
        let dim = g.usize_at_most(&key("embedding_length"), limits::MAX_EMBEDDING)?;
        let layers = g.usize_at_most(&key("block_count"), limits::MAX_LAYERS)?;
        let heads = g.usize_at_most(&key("attention.head_count"), limits::MAX_HEADS)?;
        let kv_heads = match g.opt_usize(&key("attention.head_count_kv"))? {
            Some(_) => g.usize_at_most(&key("attention.head_count_kv"), limits::MAX_HEADS)?,
            None => heads,
        };
        let ffn = g.usize_at_most(&key("feed_forward_length"), limits::MAX_FFN)?;
        let context = g.usize_at_most(&key("context_length"), limits::MAX_CONTEXT)?;
        let eps = g.opt_f32(&key("attention.layer_norm_rms_epsilon"))?.unwrap_or(1e-5);
        let rope_base = g.opt_f32(&key("rope.freq_base"))?.unwrap_or(10_000.0);
        let bad = |m: String| format_error(&g.path, m);
        if !dim.is_multiple_of(heads) {
            return Err(bad(format!("embedding_length {dim} is not a multiple of head_count {heads}")));
        }
        if !heads.is_multiple_of(kv_heads) {
            return Err(bad(format!("head_count {heads} is not a multiple of head_count_kv {kv_heads}")));
        }
        let head_dim = dim / heads;
        let rope_dim = g.opt_usize(&key("rope.dimension_count"))?.unwrap_or(head_dim);
        if rope_dim == 0 || rope_dim > head_dim || !rope_dim.is_multiple_of(2) {
            return Err(bad(format!("rope.dimension_count {rope_dim} does not fit the head size {head_dim}")));
        }
        if eps.is_nan() || eps <= 0.0 || rope_base.is_nan() || rope_base <= 0.0 {
            return Err(bad(format!("rms epsilon {eps} or rope.freq_base {rope_base} is not positive")));
        }
        let vocab = match g.content.tensor_infos.get("token_embd.weight") {
            Some(info) => match info.shape.dims() {
                [rows, cols] if *cols == dim && *rows > 0 && *rows <= limits::MAX_VOCAB => *rows,
                d => {
                    return Err(bad(format!(
                        "tensor token_embd.weight has shape {d:?}, expected [vocabulary (at most {}), {dim}]",
                        limits::MAX_VOCAB
                    )))
                }
            },
            None => return Err(bad("tensor token_embd.weight missing".into())),
        };
        Ok(Config { dim, layers, heads, kv_heads, head_dim, ffn, eps, rope_base, rope_dim, context, vocab })
    }

    fn kv_dim(&self) -> usize {
        self.kv_heads * self.head_dim
    }
}

/// One matrix of the network (`out × in`), its input width possibly padded with zero columns
/// (see [`padded_width`]).
pub(crate) struct Linear {
    inner: QMatMul,
    out: usize,
    padded: usize,
}

impl Linear {
    /// `x` is `m` rows of the input width; the result is `m` rows of `out`.
    fn forward(&self, x: &[f32], m: usize) -> Result<Vec<f32>, Error> {
        let k = x.len() / m;
        let t = if self.padded > k {
            let mut p = vec![0f32; m * self.padded];
            for (dst, src) in p.chunks_mut(self.padded).zip(x.chunks(k)) {
                dst[..k].copy_from_slice(src);
            }
            Tensor::from_vec(p, (m, self.padded), &Device::Cpu)
        } else {
            Tensor::from_slice(x, (m, k), &Device::Cpu)
        }
        .map_err(inference)?;
        let y = self.inner.forward(&t).map_err(inference)?;
        let y = y.flatten_all().and_then(|y| y.to_vec1::<f32>()).map_err(inference)?;
        debug_assert_eq!(y.len(), m * self.out);
        Ok(y)
    }
}

pub(crate) fn inference(e: candle_core::Error) -> Error {
    Error::Inference(candle_text(&e))
}

/// Matrices that read the same input (q, k, v; gate, up): one product when they could be
/// stacked into one matrix (one pass over the input, one round of the thread pool), else one each.
enum Group {
    Stacked(Linear, Vec<usize>),
    Separate(Vec<Linear>),
}

impl Group {
    /// The outputs of each matrix for the `m` rows of `x`.
    fn forward(&self, x: &[f32], m: usize) -> Result<Vec<Vec<f32>>, Error> {
        match self {
            Group::Separate(ls) => ls.iter().map(|l| l.forward(x, m)).collect(),
            Group::Stacked(l, outs) => {
                let y = l.forward(x, m)?;
                let mut parts: Vec<Vec<f32>> = outs.iter().map(|&o| Vec::with_capacity(o * m)).collect();
                for row in y.chunks(l.out) {
                    let mut at = 0;
                    for (part, &o) in parts.iter_mut().zip(outs) {
                        part.extend_from_slice(&row[at..at + o]);
                        at += o;
                    }
                }
                Ok(parts)
            }
        }
    }

    /// `ts` (each `out × inp`, as read from the file) as a group: stacked when they share a
    /// format that is converted anyway (see [`to_linear`]), so stacking costs no precision.
    fn build(ts: Vec<QTensor>, outs: &[usize], inp: usize) -> candle_core::Result<Group> {
        let dtype = ts[0].dtype();
        let same = ts.iter().all(|t| t.dtype() == dtype);
        let target = target_dtype(dtype, inp);
        let total: usize = outs.iter().sum();
        if same && (target != dtype || padded_width(target, total, inp) != inp) {
            let fs = ts.iter().map(|t| t.dequantize(&Device::Cpu)).collect::<candle_core::Result<Vec<_>>>()?;
            let stacked = Tensor::cat(&fs, 0)?;
            drop(fs);
            return Ok(Group::Stacked(quantized_linear(stacked, total, inp, target)?, outs.to_vec()));
        }
        let ls =
            ts.into_iter().zip(outs).map(|(t, &o)| to_linear(t, o, inp)).collect::<candle_core::Result<Vec<_>>>()?;
        Ok(Group::Separate(ls))
    }
}

struct Layer {
    attn_norm: Vec<f32>,
    qkv: Group,
    wo: Linear,
    ffn_norm: Vec<f32>,
    gate_up: Group,
    down: Linear,
}

/// A layer's tensors as the file stores them.
struct RawLayer {
    attn_norm: Vec<f32>,
    qkv: Vec<QTensor>,
    wo: QTensor,
    ffn_norm: Vec<f32>,
    gate_up: Vec<QTensor>,
    down: QTensor,
}

/// How weights stored in a format without a fast CPU kernel in candle are kept in memory.
///
/// Measured on SmolLM2-135M Q4_1 (2 threads): candle's Q4_1 dot product is scalar, its Q8_0 one
/// has AVX2/AVX-512 paths, so Q4_1 (and Q5_0/Q5_1/Q8_1) matrices are converted to Q8_0 at load:
/// the conversion is exact up to Q8_0's rounding of each value, twice the memory of Q4_1.
fn fast_dtype(d: GgmlDType) -> Option<GgmlDType> {
    match d {
        GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1 | GgmlDType::Q8_1 => Some(GgmlDType::Q8_0),
        _ => None,
    }
}

/// The weights of a Llama model.
pub(crate) struct Llama {
    pub cfg: Config,
    embeddings: Arc<QTensor>,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    output: Linear,
    /// `cos`/`sin` of every position and rotary frequency, computed on demand per position.
    inv_freq: Vec<f32>,
}

/// Tokens of a prompt run through the network at once.
const BATCH: usize = 256;

/// What [`Llama::forward`] returns.
#[derive(Clone, Copy)]
pub(crate) enum Want {
    /// The logits of the last position.
    Logits,
    /// The final hidden states (after the final norm) of every position.
    Hidden,
}

/// The key/value cache of one generation.
pub(crate) struct Cache {
    k: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
    len: usize,
}

impl Cache {
    pub fn new(cfg: &Config) -> Cache {
        Cache { k: vec![Vec::new(); cfg.layers], v: vec![Vec::new(); cfg.layers], len: 0 }
    }
}

/// Whether this CPU has candle's repacked Q8_0 kernels (AVX-512 VNNI or AVX-VNNI), which need
/// the input width to be a multiple of 256 and the output a multiple of 16.
fn has_q8_tiles() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vnni"))
            || (is_x86_feature_detected!("avxvnni") && is_x86_feature_detected!("avx2"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The input width a Q8_0 matrix `out × inp` is stored with. Measured on SmolLM2-135M (hidden
/// 576 = 2.25 × 256): candle's repacked VNNI kernel does a multiply-add about 4.6× faster than
/// its generic AVX2 Q8_0 dot product, so padding 576 to 768 with zero columns (a third more
/// work, exact results) pays; where the kernel is absent, nothing is padded.
fn padded_width(dtype: GgmlDType, out: usize, inp: usize) -> usize {
    const QK_K: usize = 256;
    if dtype == GgmlDType::Q8_0
        && !inp.is_multiple_of(QK_K)
        && out.is_multiple_of(16)
        && has_q8_tiles()
        && std::env::var_os("PROMPTY_LOCAL_NO_PAD").is_none()
    {
        inp.div_ceil(QK_K) * QK_K
    } else {
        inp
    }
}

/// The format a matrix of format `d` with rows of `inp` is kept in.
fn target_dtype(d: GgmlDType, inp: usize) -> GgmlDType {
    match fast_dtype(d) {
        Some(to) if inp.is_multiple_of(to.block_size()) => to,
        _ => d,
    }
}

/// `t` (`out × inp`) as a [`Linear`]: converted to Q8_0 when its format has no fast kernel, and
/// padded to [`padded_width`].
fn to_linear(t: QTensor, out: usize, inp: usize) -> candle_core::Result<Linear> {
    let target = target_dtype(t.dtype(), inp);
    let padded = padded_width(target, out, inp);
    if target == t.dtype() && padded == inp {
        return Ok(Linear { inner: QMatMul::from_arc(Arc::new(t))?, out, padded: inp });
    }
    // Converted a few rows at a time, so that no full-size f32 copy of a large matrix (the
    // output projection: vocabulary × hidden) is ever held.
    const ROWS: usize = 2048;
    if out <= ROWS {
        return quantized_linear(t.dequantize(&Device::Cpu)?, out, inp, target);
    }
    let data = t.data()?;
    let row_bytes = data.len() / out;
    let mut converted: Vec<u8> = Vec::new();
    for start in (0..out).step_by(ROWS) {
        let rows = ROWS.min(out - start);
        let bytes = &data[start * row_bytes..(start + rows) * row_bytes];
        let part = QTensor::new(QStorage::from_data(Cow::Borrowed(bytes), &Device::Cpu, t.dtype())?, (rows, inp))?;
        let mut f = part.dequantize(&Device::Cpu)?;
        if padded != inp {
            f = f.pad_with_zeros(1, 0, padded - inp)?;
        }
        converted.extend_from_slice(&QTensor::quantize(&f, target)?.data()?);
    }
    drop(data);
    drop(t);
    let storage = QStorage::from_data(Cow::Owned(converted), &Device::Cpu, target)?;
    Ok(Linear { inner: QMatMul::from_arc(Arc::new(QTensor::new(storage, (out, padded))?))?, out, padded })
}

/// The `out × inp` matrix `f` quantized to `target`, padded to [`padded_width`].
fn quantized_linear(f: Tensor, out: usize, inp: usize, target: GgmlDType) -> candle_core::Result<Linear> {
    let padded = padded_width(target, out, inp);
    let f = if padded != inp { f.pad_with_zeros(1, 0, padded - inp)? } else { f };
    Ok(Linear { inner: QMatMul::from_arc(Arc::new(QTensor::quantize(&f, target)?))?, out, padded })
}

fn vector(g: &mut Gguf, name: &str, n: usize) -> Result<Vec<f32>, Error> {
    let t = g.tensor(name, &[n])?;
    let t = t
        .dequantize(&Device::Cpu)
        .and_then(|t| t.to_vec1::<f32>())
        .map_err(|e| format_error(&g.path, format!("tensor {name}: {}", candle_text(&e))))?;
    Ok(t)
}

fn raw(g: &mut Gguf, name: &str, out: usize, inp: usize) -> Result<QTensor, Error> {
    g.tensor(name, &[out, inp])
}

impl Llama {
    /// Loads the weights of `cfg` from `g`.
    pub fn load(g: &mut Gguf, cfg: Config) -> Result<Llama, Error> {
        let (dim, kv, ffn) = (cfg.dim, cfg.kv_dim(), cfg.ffn);
        let embeddings = Arc::new(g.tensor("token_embd.weight", &[cfg.vocab, dim])?);
        let mut raw_layers = Vec::with_capacity(cfg.layers);
        for i in 0..cfg.layers {
            let p = |s: &str| format!("blk.{i}.{s}.weight");
            raw_layers.push(RawLayer {
                attn_norm: vector(g, &p("attn_norm"), dim)?,
                qkv: vec![
                    raw(g, &p("attn_q"), dim, dim)?,
                    raw(g, &p("attn_k"), kv, dim)?,
                    raw(g, &p("attn_v"), kv, dim)?,
                ],
                wo: raw(g, &p("attn_output"), dim, dim)?,
                ffn_norm: vector(g, &p("ffn_norm"), dim)?,
                gate_up: vec![raw(g, &p("ffn_gate"), ffn, dim)?, raw(g, &p("ffn_up"), ffn, dim)?],
                down: raw(g, &p("ffn_down"), dim, ffn)?,
            });
        }
        let norm = vector(g, "output_norm.weight", dim)?;
        // Tied embeddings (SmolLM2 and others): without `output.weight`, the output projection
        // is the token embedding matrix.
        let output = match g.has_tensor("output.weight") {
            true => Some(raw(g, "output.weight", cfg.vocab, dim)?),
            false => None,
        };
        let path = g.path.clone();
        let wrap = |what: String| {
            let path = path.clone();
            move |e: candle_core::Error| format_error(&path, format!("{what}: {}", candle_text(&e)))
        };
        // The conversions (see `to_linear`) run on all cores: they are most of the loading time.
        let layers = raw_layers
            .into_par_iter()
            .enumerate()
            .map(|(i, r)| {
                let w = wrap(format!("layer {i}"));
                Ok(Layer {
                    attn_norm: r.attn_norm,
                    qkv: Group::build(r.qkv, &[dim, kv, kv], dim).map_err(&w)?,
                    wo: to_linear(r.wo, dim, dim).map_err(&w)?,
                    ffn_norm: r.ffn_norm,
                    gate_up: Group::build(r.gate_up, &[ffn, ffn], dim).map_err(&w)?,
                    down: to_linear(r.down, dim, ffn).map_err(&w)?,
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let output = match output {
            Some(t) => to_linear(t, cfg.vocab, dim).map_err(wrap("tensor output.weight".into()))?,
            None => {
                let w = wrap("tensor token_embd.weight".into());
                let dtype = embeddings.dtype();
                if padded_width(dtype, cfg.vocab, dim) == dim && target_dtype(dtype, dim) == dtype {
                    let inner = QMatMul::from_arc(embeddings.clone()).map_err(w)?;
                    Linear { inner, out: cfg.vocab, padded: dim }
                } else {
                    // A copy of the embeddings' blocks, converted like any matrix.
                    let data = embeddings.data().map_err(&w)?;
                    let storage = candle_core::quantized::QStorage::from_data(data, &Device::Cpu, dtype).map_err(&w)?;
                    let copy = QTensor::new(storage, (cfg.vocab, dim)).map_err(&w)?;
                    to_linear(copy, cfg.vocab, dim).map_err(w)?
                }
            }
        };
        let inv_freq =
            (0..cfg.rope_dim / 2).map(|i| 1.0 / cfg.rope_base.powf(2.0 * i as f32 / cfg.rope_dim as f32)).collect();
        Ok(Llama { cfg, embeddings, layers, norm, output, inv_freq })
    }

    /// Runs `tokens` (at the positions after those already in `cache`) through the network,
    /// appending their keys and values to `cache`.
    pub fn forward(&self, tokens: &[u32], cache: &mut Cache, want: Want) -> Result<Vec<f32>, Error> {
        // A long prompt runs in batches, which bounds the activations held at once.
        if tokens.len() > BATCH {
            let mut hidden = Vec::new();
            let mut last = Vec::new();
            for chunk in tokens.chunks(BATCH) {
                let out = self.forward(chunk, cache, want)?;
                match want {
                    Want::Hidden => hidden.extend_from_slice(&out),
                    Want::Logits => last = out,
                }
            }
            return Ok(if let Want::Hidden = want { hidden } else { last });
        }
        let cfg = &self.cfg;
        let n = tokens.len();
        if n == 0 {
            return Err(Error::Inference("no tokens to run".into()));
        }
        if let Some(&bad) = tokens.iter().find(|&&t| t as usize >= cfg.vocab) {
            return Err(Error::Inference(format!("token id {bad} is outside the vocabulary of {} tokens", cfg.vocab)));
        }
        let start = cache.len;
        if start + n > cfg.context {
            return Err(Error::ContextOverflow { tokens: start + n, limit: cfg.context });
        }
        let (dim, hd, kv_dim) = (cfg.dim, cfg.head_dim, cfg.kv_dim());
        let ids = Tensor::from_slice(tokens, n, &Device::Cpu).map_err(inference)?;
        let mut x = self
            .embeddings
            .embedding(&ids)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(inference)?;
        let mut h = vec![0f32; n * dim];
        for (li, layer) in self.layers.iter().enumerate() {
            rms_norm(&x, &layer.attn_norm, cfg.eps, &mut h);
            let mut qkv = layer.qkv.forward(&h, n)?.into_iter();
            let (Some(mut q), Some(mut k), Some(v)) = (qkv.next(), qkv.next(), qkv.next()) else {
                return Err(Error::Inference("attention projections missing".into()));
            };
            for i in 0..n {
                let pos = start + i;
                for head in q[i * dim..(i + 1) * dim].chunks_mut(hd) {
                    self.rope(head, pos);
                }
                for head in k[i * kv_dim..(i + 1) * kv_dim].chunks_mut(hd) {
                    self.rope(head, pos);
                }
            }
            cache.k[li].extend_from_slice(&k);
            cache.v[li].extend_from_slice(&v);
            let att = attention(cfg, &q, &cache.k[li], &cache.v[li], start, n);
            let o = layer.wo.forward(&att, n)?;
            for (xi, oi) in x.iter_mut().zip(&o) {
                *xi += oi;
            }
            rms_norm(&x, &layer.ffn_norm, cfg.eps, &mut h);
            let mut gu = layer.gate_up.forward(&h, n)?.into_iter();
            let (Some(g), Some(u)) = (gu.next(), gu.next()) else {
                return Err(Error::Inference("feed-forward projections missing".into()));
            };
            let act: Vec<f32> = g.iter().zip(&u).map(|(&g, &u)| g / (1.0 + (-g).exp()) * u).collect();
            let d = layer.down.forward(&act, n)?;
            for (xi, di) in x.iter_mut().zip(&d) {
                *xi += di;
            }
        }
        cache.len = start + n;
        match want {
            Want::Hidden => {
                rms_norm(&x, &self.norm, cfg.eps, &mut h);
                Ok(h)
            }
            Want::Logits => {
                let last = &x[(n - 1) * dim..];
                let mut hl = vec![0f32; dim];
                rms_norm(last, &self.norm, cfg.eps, &mut hl);
                self.output.forward(&hl, 1)
            }
        }
    }

    /// Rotary embedding of one head at `pos`, on adjacent pairs (GGUF's Llama layout).
    fn rope(&self, head: &mut [f32], pos: usize) {
        let p = pos as f32;
        for (i, &f) in self.inv_freq.iter().enumerate() {
            let (sin, cos) = (p * f).sin_cos();
            let (a, b) = (head[2 * i], head[2 * i + 1]);
            head[2 * i] = a * cos - b * sin;
            head[2 * i + 1] = a * sin + b * cos;
        }
    }
}

fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let dim = w.len();
    for (row, o) in x.chunks(dim).zip(out.chunks_mut(dim)) {
        let ss: f32 = row.iter().map(|v| v * v).sum::<f32>() / dim as f32;
        let scale = 1.0 / (ss + eps).sqrt();
        for ((o, &v), &w) in o.iter_mut().zip(row).zip(w) {
            *o = v * scale * w;
        }
    }
}

/// Causal attention of `n` new queries (positions `start..start+n`) over the cache
/// (`start + n` positions of keys and values). Returns `n × dim`.
fn attention(cfg: &Config, q: &[f32], k: &[f32], v: &[f32], start: usize, n: usize) -> Vec<f32> {
    let (dim, hd, kv_dim) = (cfg.dim, cfg.head_dim, cfg.kv_dim());
    let group = cfg.heads / cfg.kv_heads;
    let scale = 1.0 / (hd as f32).sqrt();
    let mut out = vec![0f32; n * dim];
    let work = |(idx, o): (usize, &mut [f32])| {
        let (i, h) = (idx / cfg.heads, idx % cfg.heads);
        let kvh = h / group;
        let qh = &q[i * dim + h * hd..i * dim + (h + 1) * hd];
        let t = start + i + 1;
        let mut scores: Vec<f32> = (0..t)
            .map(|j| {
                let kj = &k[j * kv_dim + kvh * hd..j * kv_dim + (kvh + 1) * hd];
                qh.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>() * scale
            })
            .collect();
        let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0.0;
        for s in scores.iter_mut() {
            *s = (*s - max).exp();
            sum += *s;
        }
        for (j, s) in scores.iter().enumerate() {
            let w = s / sum;
            let vj = &v[j * kv_dim + kvh * hd..j * kv_dim + (kvh + 1) * hd];
            for (oi, vi) in o.iter_mut().zip(vj) {
                *oi += w * vi;
            }
        }
    };
    // Split across threads only when there is enough work to pay for it.
    if n * (start + n) * dim > 1 << 20 {
        out.par_chunks_mut(hd).enumerate().for_each(work);
    } else {
        out.chunks_mut(hd).enumerate().for_each(work);
    }
    out
}
