//! What no implementation of `generate` can avoid on this machine, measured apart from roce-gen's
//! own code: calamine reading the plan (no limits, no validation, one core, since every bundle
//! needs the whole plan first) and the sha256 of every `.tar` and `.tar.gz` that `index.json`
//! must carry (on every core). `benches/scale.sh` runs it after each `generate` and prints its
//! rows in the same table.
//!
//!   cargo bench --bench floor -- PLAN.xlsx OUT_DIR

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use calamine::{Reader, open_workbook_auto_from_rs};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

/// Hosts decompressed and hashed together: bounds memory to a few tens of MB.
const BATCH: usize = 256;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [plan, out] = args.as_slice() else {
        anyhow::bail!("usage: cargo bench --bench floor -- PLAN.xlsx OUT_DIR");
    };

    let bytes = std::fs::read(plan)?;
    let started = Instant::now();
    let mut book = open_workbook_auto_from_rs(std::io::Cursor::new(&bytes[..]))?;
    let mut cells = 0;
    for name in book.sheet_names() {
        cells += book.worksheet_range(&name)?.used_cells().count();
    }
    let read = started.elapsed();

    let mut bundles: Vec<PathBuf> = walkdir::WalkDir::new(out)
        .max_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .map(walkdir::DirEntry::into_path)
        .filter(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .collect();
    bundles.sort();
    // Only the hashing is timed; reading and decompressing a batch are not.
    let mut hashing = Duration::ZERO;
    let mut hashed = 0usize;
    for batch in bundles.chunks(BATCH) {
        let files = batch
            .par_iter()
            .map(|p| {
                let gz = std::fs::read(p)?;
                let mut tar = Vec::new();
                flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut tar)?;
                Ok((gz, tar))
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        let started = Instant::now();
        let sum: usize = files
            .par_iter()
            .map(|(gz, tar)| usize::from(Sha256::digest(gz)[0] ^ Sha256::digest(tar)[0]))
            .sum();
        hashing += started.elapsed();
        std::hint::black_box(sum);
        hashed += files
            .iter()
            .map(|(gz, tar)| gz.len() + tar.len())
            .sum::<usize>();
    }

    println!(
        "| floor: calamine alone reads the plan ({} cells; no limits, no validation) | {:.2} | |",
        cells,
        read.as_secs_f64()
    );
    println!(
        "| floor: sha256 of {} bundles' .tar and .tar.gz ({} MB), {} threads | {:.2} | |",
        bundles.len(),
        hashed / 1_000_000,
        rayon::current_num_threads(),
        hashing.as_secs_f64()
    );
    Ok(())
}
