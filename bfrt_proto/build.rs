//! Compiles `proto/` with protox (a protobuf compiler in Rust), so a fresh machine needs no
//! system `protoc`. Every `.proto` under `proto/` is compiled; google/protobuf/any.proto is
//! protox's built-in copy.

use std::path::{Path, PathBuf};

fn protos(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read proto dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            protos(&path, out);
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = Path::new("proto");
    let mut files = Vec::new();
    protos(root, &mut files);
    files.sort();
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(&files, [root])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
