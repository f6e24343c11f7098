"""`python -m bootimage build --ca-cert PATH --out DIR [...]`: build Greenlight's boot images."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .build import Recipe, build
from .debian import BuildError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bootimage", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("build", help="build (or reuse) the ephemeral image and its ISO")
    cmd.add_argument("--ca-cert", type=Path, required=True, help="Greenlight's CA (PEM)")
    cmd.add_argument("--out", type=Path, required=True, help="output directory")
    cmd.add_argument("--cache", type=Path, help="where the base archive is kept (OUT/cache)")
    cmd.add_argument("--host-os-url", help="agent API URL baked into os.img (builds os.img)")
    cmd.add_argument("--extra-packages", nargs="*", default=[], help="more Debian packages")
    cmd.add_argument(
        "--extra-debs", nargs="*", type=Path, default=[], help="local .deb files (vendor tools)"
    )
    cmd.add_argument("--overlay", type=Path, help="a tree copied over the image's root")
    cmd.add_argument(
        "--trusted-keys", type=Path, help="OpenPGP public keys that OS image signatures must match"
    )
    cmd.add_argument("--kernel-args", default="", help="kernel arguments for every boot")
    cmd.add_argument("--log", type=Path, help="write the build's tool output here")
    args = parser.parse_args(argv)
    recipe = Recipe(
        ca_cert=args.ca_cert,
        host_os_url=args.host_os_url,
        extra_packages=tuple(args.extra_packages),
        extra_debs=tuple(args.extra_debs),
        overlay=args.overlay,
        trusted_keys=args.trusted_keys,
        kernel_args=args.kernel_args,
    )
    log = args.log.open("ab") if args.log else None
    try:
        result = build(recipe, args.out, args.cache, log or sys.stderr)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if log:
            log.close()
    print(
        json.dumps(
            {"reused": result.reused, "timings": result.timings, **result.manifest}, indent=2
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
