//! The registry client and chart repositories against real registries on loopback: distribution
//! v3 with htpasswd Basic auth and its Bearer-token twin (the realm served by `oci::token_endpoint`),
//! images pushed with crane, charts pushed with `helm push` and served as a classic repository; a
//! scripted server for 429 and ETag answers. No credential appears in any error.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kubectl_drift::source::chart_repo::{ChartRepos, ChartSource};
use kubectl_drift::source::registry::{
    ClientOptions, Registries, RegistryConfig, RegistryError, RetryAfter, api_host, media,
};

use crate::common::{Helm, runtime};
use crate::oci::{TAG_SHAPES, oci, serve, serve_dir, tempdir, token_endpoint, unique_repo, write_chart};

fn paged(page_size: usize) -> ClientOptions {
    ClientOptions { page_size, ..Default::default() }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

fn shapes() -> Vec<String> {
    sorted(TAG_SHAPES.iter().map(|s| s.to_string()).collect())
}

#[ignore = "needs the local control plane"]
#[test]
fn registry_tags_follow_link_pages_with_basic_auth() {
    let _c = crate::needs_cluster!("registry_tags_follow_link_pages_with_basic_auth");
    let o = oci();
    let repo = unique_repo("tags");
    o.push_tag_shapes(&repo);
    let rt = runtime();

    let client = o.client(paged(8), Some(&o.user), Some(&o.password));
    // Five callers at once: one tag list is fetched, page by page.
    let lists = rt.block_on(futures::future::join_all((0..5).map(|_| client.tags(&o.registry, &repo))));
    for l in lists {
        assert_eq!(sorted(l.unwrap()), shapes());
    }
    let pages = TAG_SHAPES.len().div_ceil(8) as u64;
    let counts = &client.counts()[&o.registry];
    assert_eq!(counts.tag_list, pages, "{counts:?}");
    assert_eq!(counts.ping, 1, "{counts:?}");
    assert_eq!(counts.requests, pages + 1, "{counts:?}");

    // A list longer than the page bound is an error, never a cut list.
    let bounded = o.client(
        ClientOptions { page_size: 8, max_tag_pages: 2, ..Default::default() },
        Some(&o.user),
        Some(&o.password),
    );
    let err = rt.block_on(bounded.tags(&o.registry, &repo)).unwrap_err();
    assert!(matches!(err, RegistryError::TooManyPages { pages: 2, .. }), "{err}");

    // An unknown repository is "not found", naming the registry.
    let err = rt.block_on(client.tags(&o.registry, &format!("{repo}-missing"))).unwrap_err();
    assert!(matches!(err, RegistryError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains(&o.registry), "{err}");
}

#[ignore = "needs the local control plane"]
#[test]
fn registry_wrong_or_missing_credentials_are_errors_that_show_no_secret() {
    let _c = crate::needs_cluster!("registry_wrong_or_missing_credentials_are_errors_that_show_no_secret");
    let o = oci();
    let repo = unique_repo("creds");
    o.push_image(&repo, "1.0.0", "creds");
    let rt = runtime();

    let wrong_pw = "wrong-Pa55word-xyz";
    let wrong = o.client(ClientOptions::default(), Some(&o.user), Some(wrong_pw));
    let err = rt.block_on(wrong.tags(&o.registry, &repo)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RegistryError::Unauthorized { status: 401, .. }), "{text}");
    assert!(text.contains(&o.registry) && text.contains("the credentials were refused"), "{text}");
    assert!(!text.contains(wrong_pw) && !text.contains(&o.password) && !format!("{err:?}").contains(wrong_pw));

    let none = o.client(ClientOptions::default(), None, None);
    let err = rt.block_on(none.tags(&o.registry, &repo)).unwrap_err().to_string();
    assert!(err.contains("asks for Basic credentials and none are configured"), "{err}");

    // Opt-in pull-secret credentials (a .dockerconfigjson) for a registry the config has none for.
    let from_secret = o.client(ClientOptions::default(), None, None);
    let json = std::fs::read(o.docker_config.join("config.json")).unwrap();
    assert_eq!(from_secret.add_docker_config(&json).unwrap(), vec![o.registry.clone()]);
    assert_eq!(rt.block_on(from_secret.tags(&o.registry, &repo)).unwrap(), vec!["1.0.0"]);
}

#[ignore = "needs the local control plane"]
#[test]
fn registry_bearer_tokens_anonymous_and_with_credentials() {
    let _c = crate::needs_cluster!("registry_bearer_tokens_anonymous_and_with_credentials");
    let o = oci();
    let tokens = token_endpoint();
    let public = unique_repo("pub");
    let private = unique_repo("private");
    let digest = o.push_image(&public, "1.0.0", "public");
    o.push_image(&private, "2.0.0", "private");
    let rt = runtime();
    let realm = format!("127.0.0.1:{}", std::env::var("DRIFT_REGISTRY_TOKEN_REALM_PORT").unwrap());

    // Anonymous: a pull token per repository, as Docker Hub, ghcr.io and quay.io hand out.
    let anonymous_before = tokens.anonymous.load(Ordering::SeqCst);
    let anon = o.client(ClientOptions::default(), None, None);
    assert_eq!(rt.block_on(anon.tags(&o.token_registry, &public)).unwrap(), vec!["1.0.0"]);
    let d = rt.block_on(anon.digest(&o.token_registry, &public, "1.0.0")).unwrap();
    assert_eq!(d.digest, digest);
    let counts = anon.counts();
    assert_eq!(counts[&realm].token, 1, "one token for the repository, reused: {counts:?}");
    assert_eq!(counts[&o.token_registry].ping, 1, "{counts:?}");
    assert!(tokens.anonymous.load(Ordering::SeqCst) > anonymous_before);

    // A repository anonymous tokens give no access to.
    let err = rt.block_on(anon.tags(&o.token_registry, &private)).unwrap_err().to_string();
    assert!(err.contains(&o.token_registry) && err.contains("no credentials are configured"), "{err}");

    // Basic credentials at the token endpoint.
    let with_creds_before = tokens.with_credentials.load(Ordering::SeqCst);
    let authed = o.client(ClientOptions::default(), Some(&o.user), Some(&o.password));
    assert_eq!(rt.block_on(authed.tags(&o.token_registry, &private)).unwrap(), vec!["2.0.0"]);
    assert!(tokens.with_credentials.load(Ordering::SeqCst) > with_creds_before);

    // Wrong credentials: the token endpoint refuses them; the error names the registry only.
    let wrong_pw = "not-the-Pa55word";
    let wrong = o.client(ClientOptions::default(), Some(&o.user), Some(wrong_pw));
    let err = rt.block_on(wrong.tags(&o.token_registry, &private)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RegistryError::Unauthorized { status: 401, .. }), "{text}");
    assert!(text.contains("the credentials were refused") && !text.contains(wrong_pw), "{text}");
}

#[ignore = "needs the local control plane"]
#[test]
fn registry_digests_of_indexes_and_of_a_repushed_latest() {
    let _c = crate::needs_cluster!("registry_digests_of_indexes_and_of_a_repushed_latest");
    let o = oci();
    let _ = token_endpoint();
    let repo = unique_repo("digest");
    let (index, platforms) = o.push_index(&repo, "1.0.0", &["linux/amd64", "linux/arm64/v8"]);
    let d1 = o.push_image(&repo, "latest", "first");
    let rt = runtime();

    let client = o.client(ClientOptions::default(), Some(&o.user), Some(&o.password));
    for registry in [&o.registry, &o.token_registry] {
        let d = rt.block_on(client.digest(registry, &repo, "1.0.0")).unwrap();
        assert_eq!(d.index.as_deref(), Some(index.as_str()));
        assert_eq!(d.digest, index);
        assert_eq!(d.manifests.iter().map(|m| m.digest.clone()).collect::<Vec<_>>(), platforms);
        assert_eq!(
            d.manifests.iter().map(|m| m.platform.clone().unwrap_or_default()).collect::<Vec<_>>(),
            ["linux/amd64", "linux/arm64/v8"]
        );
        assert!(d.matches(&platforms[1]) && d.matches(&index) && !d.matches(&d1));
        let single = rt.block_on(client.digest(registry, &repo, "latest")).unwrap();
        assert_eq!((single.digest.as_str(), single.index.as_deref()), (d1.as_str(), None));
        assert_eq!(single.manifests.len(), 1);
    }
    // HEAD for digests; one GET per index for its platform manifests.
    let counts = &client.counts()[&o.registry];
    assert_eq!((counts.manifest_head, counts.manifest_get), (2, 1), "{counts:?}");

    // A Docker manifest list is an index too.
    let list_ref = format!("{}/{repo}:docker-list", o.registry);
    let members: Vec<String> = platforms.iter().map(|d| format!("{}/{repo}@{d}", o.registry)).collect();
    o.crane(&["index", "append", "--docker-empty-base", "-m", &members[0], "-m", &members[1], "-t", &list_ref]).ok();
    let list = rt.block_on(client.digest(&o.registry, &repo, "docker-list")).unwrap();
    assert_eq!(list.media_type, media::DOCKER_LIST);
    assert_eq!(list.index.as_deref(), Some(o.digest(&repo, "docker-list").as_str()));
    assert!(list.matches(&platforms[0]) && list.matches(&platforms[1]));

    // `latest` pushed again: a new digest; a client with a fresh view sees it.
    let d2 = o.push_image(&repo, "latest", "second");
    assert_ne!(d1, d2);
    let fresh = o.client(ClientOptions::default(), Some(&o.user), Some(&o.password));
    let now = rt.block_on(fresh.digest(&o.registry, &repo, "latest")).unwrap();
    assert_eq!(now.digest, d2);
    assert!(!now.matches(&d1));
    // By digest, the old image is still there.
    assert_eq!(rt.block_on(fresh.digest(&o.registry, &repo, &d1)).unwrap().digest, d1);
}

#[ignore = "needs the local control plane"]
#[test]
fn registry_cache_makes_a_warm_rerun_send_no_requests() {
    let _c = crate::needs_cluster!("registry_cache_makes_a_warm_rerun_send_no_requests");
    let o = oci();
    let repo = unique_repo("cache");
    o.push_tag_shapes(&repo);
    let (index, _) = o.push_index(&repo, "multi", &["linux/amd64", "linux/arm64"]);
    let dir = tempdir("registry-cache");
    let rt = runtime();
    let with_cache = |ttl: Duration| {
        let options =
            ClientOptions { page_size: 8, cache_dir: Some(dir.clone()), cache_ttl: ttl, ..Default::default() };
        o.client(options, Some(&o.user), Some(&o.password))
    };
    let run = |client: &Registries| {
        rt.block_on(async {
            let tags = client.tags(&o.registry, &repo).await.unwrap();
            let d = client.digest(&o.registry, &repo, "multi").await.unwrap();
            (sorted(tags), d)
        })
    };
    let pages = (TAG_SHAPES.len() + 4).div_ceil(8) as u64;

    let cold = with_cache(Duration::from_secs(3600));
    let (tags, d) = run(&cold);
    assert_eq!(d.index.as_deref(), Some(index.as_str()));
    assert_eq!(cold.counts()[&o.registry].tag_list, pages);

    // Within the TTL: the same answers and not one request (no ping either).
    let warm = with_cache(Duration::from_secs(3600));
    let (tags2, d2) = run(&warm);
    assert_eq!((tags2, d2), (tags.clone(), d));
    let counts = &warm.counts()[&o.registry];
    assert_eq!((counts.requests, counts.tag_list), (0, 0), "{counts:?}");
    assert_eq!(counts.cache_hits, pages + 2, "pages, the HEAD and the index: {counts:?}");
    assert!(!dir.read_dir().unwrap().any(|f| {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap_or_default();
        text.contains(&o.password) || text.contains("Basic ") || text.contains("Bearer ")
    }));

    // Past the TTL the tag list is asked again; the index (by digest) never is.
    let stale = with_cache(Duration::ZERO);
    let (tags3, _) = run(&stale);
    assert_eq!(tags3, tags);
    let counts = &stale.counts()[&o.registry];
    assert_eq!((counts.tag_list, counts.manifest_head, counts.manifest_get), (pages, 1, 0), "{counts:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[ignore = "needs the local control plane"]
#[test]
fn registry_429_retry_after_is_bounded_and_etags_revalidate() {
    let _c = crate::needs_cluster!("registry_429_retry_after_is_bounded_and_etags_revalidate");
    let rt = runtime();
    let dir = tempdir("registry-429");
    let slow_hits = Arc::new(AtomicU64::new(0));
    let hits = slow_hits.clone();
    let addr = rt.block_on(serve(0, move |_, path, headers| {
        let etag = headers.get("if-none-match").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let json = |b: &str| (200, vec![("etag".to_string(), "\"e1\"".to_string())], b.as_bytes().to_vec());
        let path = path.split('?').next().unwrap_or("");
        let api_version = headers.get("x-api-version").and_then(|v| v.to_str().ok()) == Some("2022-11-28");
        match path {
            "/v2/" => (200, vec![], b"{}".to_vec()),
            "/v2/slow/app/tags/list" => {
                if hits.fetch_add(1, Ordering::SeqCst) < 2 {
                    (429, vec![("retry-after".into(), "1".into())], vec![])
                } else if etag == "\"e1\"" {
                    (304, vec![], vec![])
                } else {
                    json(r#"{"name":"slow/app","tags":["1.0.0","1.1.0"]}"#)
                }
            }
            "/v2/busy/app/tags/list" => (429, vec![("retry-after".into(), "3600".into())], vec![]),
            "/stable.txt" if etag == "\"e1\"" => (304, vec![], vec![]),
            "/stable.txt" => json("v1.36.3\n"),
            "/versioned" if api_version => (200, vec![], b"ok".to_vec()),
            "/versioned" => (400, vec![], vec![]),
            _ => (404, vec![], vec![]),
        }
    }));
    let host = addr.to_string();
    let client = |ttl: Duration| {
        let options = ClientOptions {
            registries: vec![RegistryConfig { host: host.clone(), plain_http: true, ..Default::default() }],
            cache_dir: Some(dir.clone()),
            cache_ttl: ttl,
            ..Default::default()
        };
        Registries::new(options, |_| None).unwrap()
    };

    // Two 429s with Retry-After: 1 are waited out.
    let first = client(Duration::ZERO);
    let started = Instant::now();
    assert_eq!(rt.block_on(first.tags(&host, "slow/app")).unwrap(), ["1.0.0", "1.1.0"]);
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!(first.counts()[&host].rate_limited, 2);

    // Retry-After beyond the bound: an error at once, naming the registry and when to retry.
    let started = Instant::now();
    let err = rt.block_on(first.tags(&host, "busy/app")).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(matches!(&err, RegistryError::RateLimited { retry_after: RetryAfter::Seconds(3600), .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains(&host) && text.contains("429") && text.contains("retry in 3600 s"), "{text}");

    // A stale cached list is revalidated with If-None-Match; the 304 is answered from the cache.
    let second = client(Duration::ZERO);
    assert_eq!(rt.block_on(second.tags(&host, "slow/app")).unwrap(), ["1.0.0", "1.1.0"]);
    let counts = &second.counts()[&host];
    assert_eq!((counts.tag_list, counts.not_modified), (1, 1), "{counts:?}");

    // The same manners for plain upstream GETs. One client is one run: a URL is asked once in it,
    // however many callers want it.
    let url = format!("http://{host}/stable.txt");
    let got = rt.block_on(second.get_cached(&url, "text/plain", Some(Duration::ZERO))).unwrap();
    assert_eq!((&got.body[..], got.from_cache), (&b"v1.36.3\n"[..], false));
    let same = rt.block_on(second.get_cached(&url, "text/plain", Some(Duration::ZERO))).unwrap();
    assert_eq!((&same.body[..], same.from_cache), (&b"v1.36.3\n"[..], false));
    let counts = &second.counts()[&host];
    assert_eq!((counts.other, counts.not_modified), (1, 1), "the tag list's 304 and one GET: {counts:?}");
    // The next run revalidates the stale copy: If-None-Match, a 304 answered from the cache.
    let next = client(Duration::ZERO);
    let again = rt.block_on(next.get_cached(&url, "text/plain", Some(Duration::ZERO))).unwrap();
    assert_eq!((&again.body[..], again.from_cache), (&b"v1.36.3\n"[..], true));
    let counts = &next.counts()[&host];
    assert_eq!((counts.other, counts.not_modified), (1, 1), "{counts:?}");
    // Within the TTL a run asks nothing.
    let later = client(Duration::ZERO);
    let fresh = rt.block_on(later.get_cached(&url, "text/plain", Some(Duration::from_secs(60)))).unwrap();
    assert!(fresh.from_cache);
    assert_eq!(later.counts().get(&host).map_or(0, |c| c.other), 0);
    let err = rt.block_on(second.get_cached(&format!("http://{host}/missing"), "*/*", None)).unwrap_err();
    assert!(matches!(err, RegistryError::NotFound { .. }), "{err}");
    // Extra request headers (an API version, a token) are sent; they are not part of the cache key.
    let url = format!("http://{host}/versioned");
    let got = rt.block_on(second.get_cached_with(&url, "*/*", None, &[("X-Api-Version", "2022-11-28")])).unwrap();
    assert_eq!(&got.body[..], b"ok");
    let plain = client(Duration::ZERO);
    let err = rt.block_on(plain.get_cached(&format!("http://{host}/versioned?x=1"), "*/*", None)).unwrap_err();
    assert!(matches!(err, RegistryError::Status { status: 400, .. }), "{err}");
    assert_eq!(api_host(&host), host);
    let _ = std::fs::remove_dir_all(dir);
}

#[ignore = "needs the local control plane"]
#[test]
fn registry_chart_versions_from_oci_and_classic_repositories() {
    let c = crate::needs_cluster!("registry_chart_versions_from_oci_and_classic_repositories");
    let o = oci();
    let rt = runtime();
    let src = tempdir("charts-src");
    let pkgs = tempdir("charts-pkg");
    let versions = [("0.9.0", "1.24.0", true), ("1.0.0", "1.25.0", false), ("2.0.0+build.1", "1.27.1", false)];
    for (v, app, deprecated) in versions {
        let chart = write_chart(&src, "web", v, app, deprecated);
        c.helm(Helm::V4, &["package", chart.to_str().unwrap(), "-d", pkgs.to_str().unwrap()]).ok();
    }
    // OCI: helm push (a `+` becomes `_` in the tag).
    o.helm_login(&c, Helm::V4);
    let prefix = unique_repo("charts").replace("/app", "");
    for entry in std::fs::read_dir(&pkgs).unwrap() {
        let tgz = entry.unwrap().path();
        c.helm(Helm::V4, &["push", tgz.to_str().unwrap(), &format!("oci://{}/{prefix}", o.registry), "--plain-http"])
            .ok();
    }
    // Classic: helm repo index + a static server.
    let addr = rt.block_on(serve_dir(pkgs.clone()));
    c.helm(Helm::V4, &["repo", "index", pkgs.to_str().unwrap(), "--url", &format!("http://{addr}/")]).ok();

    let client = o.client(ClientOptions::default(), Some(&o.user), Some(&o.password));
    let repos = ChartRepos::new(&client);
    let oci_source = ChartSource::parse(&format!("oci://{}/{prefix}", o.registry)).unwrap();
    let classic = ChartSource::parse(&format!("http://{addr}")).unwrap();
    let want: Vec<String> = versions.iter().map(|v| v.0.to_string()).collect();
    for source in [&oci_source, &classic] {
        let got = rt.block_on(repos.versions(source, "web")).unwrap();
        assert_eq!(sorted(got), want, "{source:?}");
        let all = rt.block_on(repos.all(source, "web")).unwrap();
        assert_eq!(all.len(), 3);
        for (v, app, deprecated) in versions {
            let meta = rt.block_on(repos.version(source, "web", v)).unwrap();
            assert_eq!(meta.name, "web");
            assert_eq!(meta.version, v);
            assert_eq!(meta.app_version.as_deref(), Some(app), "{source:?}");
            assert_eq!(meta.deprecated, deprecated, "{source:?} {v}");
            assert_eq!(meta.home.as_deref(), Some("https://example.com/web"));
            assert_eq!(meta.sources, ["https://github.com/example/web"]);
            assert_eq!(meta.annotations["artifacthub.io/changes"], format!("- fixed {v}"));
            assert!(meta.created.as_deref().is_some_and(|c| c.starts_with("20")), "{source:?}: {meta:?}");
        }
        let err = rt.block_on(repos.versions(source, "nothere")).unwrap_err();
        assert!(matches!(err, RegistryError::NotFound { .. }), "{err}");
    }
    // The OCI chart repository was read through the registry (tags once; a manifest + config per version).
    let counts = &client.counts()[&o.registry];
    assert!(counts.tag_list >= 1 && counts.blob >= 3, "{counts:?}");
    let _ = std::fs::remove_dir_all(src);
    let _ = std::fs::remove_dir_all(pkgs);
}

#[ignore = "needs the local control plane"]
#[test]
fn registry_requests_per_host_respect_the_concurrency_cap() {
    let _c = crate::needs_cluster!("registry_requests_per_host_respect_the_concurrency_cap");
    // The scripted registry runs on its own runtime; each answer takes 150 ms.
    let server_rt = runtime();
    let in_flight = Arc::new(AtomicU64::new(0));
    let peak = Arc::new(AtomicU64::new(0));
    let (now, max) = (in_flight.clone(), peak.clone());
    let addr = server_rt.block_on(serve(0, move |_, path, _| {
        if path == "/v2/" {
            return (200, vec![], b"{}".to_vec());
        }
        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
        max.fetch_max(n, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(150));
        now.fetch_sub(1, Ordering::SeqCst);
        (200, vec![], br#"{"tags":["1.0.0"]}"#.to_vec())
    }));
    let host = addr.to_string();
    let rt = runtime();
    let scan = |cap: usize| {
        peak.store(0, Ordering::SeqCst);
        let options = ClientOptions {
            registries: vec![RegistryConfig {
                host: host.clone(),
                plain_http: true,
                concurrency: Some(cap),
                ..Default::default()
            }],
            concurrency: 8,
            ..Default::default()
        };
        let client = Registries::new(options, |_| None).unwrap();
        let repos: Vec<String> = (0..6).map(|i| format!("r{i}/app")).collect();
        let lists = rt.block_on(futures::future::join_all(repos.iter().map(|r| client.tags(&host, r))));
        assert!(lists.into_iter().all(|l| l.unwrap() == ["1.0.0"]));
        assert_eq!(client.counts()[&host].tag_list, 6);
        peak.load(Ordering::SeqCst)
    };
    assert_eq!(scan(1), 1, "cap 1: one request at a time");
    assert_eq!(scan(3), 3, "cap 3: three at a time, never more");
}
