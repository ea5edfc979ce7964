//! A throw-away PostgreSQL cluster for tests and benchmarks: `initdb` into a temporary folder, a
//! server listening only on a unix socket in that folder, stopped and deleted when the [`Cluster`]
//! is dropped. Run as the `postgres` user when the process is root (initdb refuses root).
//! Included with `#[path]` by `prompty/tests/durability.rs` and `prompty/benches/durability.rs`.
//!
//! Needs Debian's `postgresql` package (the server binaries under `/usr/lib/postgresql/*/bin`);
//! without it, [`Cluster::start`] fails saying so: a test that needs PostgreSQL never skips.

#![allow(dead_code)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// The superuser of every cluster, and its password (the clusters use scram-sha-256, so a wrong
/// password is refused like on a real server).
pub const USER: &str = "prompty";
pub const PASSWORD: &str = "Pw-9f3c1a7e-durability";
const PORT: u16 = 5432;

/// A running cluster; dropping it stops the server and deletes its folder.
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    /// Some((uid, gid)) of `postgres` when the commands run as that user.
    run_as: Option<(u32, u32)>,
}

/// The folder of `initdb` and `pg_ctl`: the newest `/usr/lib/postgresql/N/bin`, else `$PATH`.
fn find_bin() -> PathBuf {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.split('.').next()?.parse().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((version, bin))
        })
        .collect();
    found.sort();
    if let Some((_, bin)) = found.pop() {
        return bin;
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file());
    on_path.unwrap_or_else(|| {
        panic!(
            "PostgreSQL's server programs (initdb, pg_ctl) were not found under /usr/lib/postgresql/*/bin nor on \
             PATH: install Debian's `postgresql` package (apt-get install -y postgresql). These tests start a \
             throw-away cluster of their own and never skip."
        )
    })
}

fn id_of(flag: &str) -> u32 {
    let out = Command::new("id").args([flag, "postgres"]).output().expect("run `id`");
    assert!(
        out.status.success(),
        "running as root, the tests start PostgreSQL as the user `postgres`, which does not exist: install Debian's \
         `postgresql` package (it creates the user)"
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().expect("a numeric id")
}

impl Cluster {
    /// Starts a cluster. `durable: false` turns fsync off (tests); `true` keeps the server's
    /// defaults (benchmarks of durable commits).
    pub fn start(durable: bool) -> Cluster {
        static N: AtomicU32 = AtomicU32::new(0);
        let bin = find_bin();
        let root = std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false);
        let run_as = root.then(|| (id_of("-u"), id_of("-g")));
        // Under the system's temporary folder: `postgres` must be able to reach it, which a
        // checkout under /root would not allow.
        let dir = std::env::temp_dir().join(format!(
            "prompty-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the cluster's folder");
        let cluster = Cluster { dir, bin, run_as };
        let pwfile = cluster.dir.join("pw");
        std::fs::write(&pwfile, PASSWORD).expect("write the password file");
        cluster.own(&cluster.dir);
        cluster.own(&pwfile);
        let data = cluster.dir.join("data");
        cluster.run_checked(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                USER,
                &format!("--pwfile={}", pwfile.display()),
                "-A",
                "scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        );
        let mut options = format!("-c listen_addresses='' -k {} -p {PORT}", cluster.dir.display());
        if !durable {
            options.push_str(" -c fsync=off -c synchronous_commit=off -c full_page_writes=off");
        }
        let log = cluster.dir.join("server.log");
        cluster.run_checked(
            "pg_ctl",
            &["-D", data.to_str().unwrap(), "-l", log.to_str().unwrap(), "-w", "-t", "60", "-o", &options, "start"],
        );
        cluster
    }

    fn own(&self, path: &Path) {
        if let Some((uid, gid)) = self.run_as {
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("give the folder to postgres");
        }
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        let path = self.bin.join(program);
        let mut command = match self.run_as {
            Some(_) => {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(&path);
                c
            }
            None => Command::new(&path),
        };
        command.args(args).current_dir(&self.dir).env("PGPASSWORD", PASSWORD);
        command.output().unwrap_or_else(|e| panic!("cannot run {}: {e}", path.display()))
    }

    fn run_checked(&self, program: &str, args: &[&str]) -> Output {
        let out = self.run(program, args);
        if !out.status.success() {
            let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
            panic!(
                "{program} {args:?} failed ({}):\n{}\n{}\nserver log:\n{log}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        out
    }

    /// The folder of the server's socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// A new empty database; its URL.
    pub fn database(&self, name: &str) -> String {
        let dir = self.dir.display().to_string();
        let port = PORT.to_string();
        self.run_checked("createdb", &["-h", &dir, "-p", &port, "-U", USER, name]);
        self.url(name)
    }

    /// The URL of database `name` (with the password).
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{USER}:{PASSWORD}@/{name}?host={}&port={PORT}", self.dir.display())
    }

    /// Runs `sql` with `psql` in database `name`; its output (unaligned, tuples only).
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let dir = self.dir.display().to_string();
        let port = PORT.to_string();
        let out = self.run_checked(
            "psql",
            &["-h", &dir, "-p", &port, "-U", USER, "-d", name, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        if data.exists() {
            let _ = self.run("pg_ctl", &["-D", data.to_str().unwrap_or(""), "-m", "immediate", "-w", "stop"]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
