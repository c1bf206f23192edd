"""swssd/compat/schema.py is what gen_schema.py makes of sonic-swss-common's common/schema.h."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from swssd.compat import gen_schema, schema, swsscommon

ARCHIVE = Path(__file__).resolve().parents[2] / "shared" / "vendor" / "sonic-swss-common-85a39d8.tar.gz"


def test_the_survey_s_names_are_there() -> None:
    assert (swsscommon.APPL_DB, swsscommon.CONFIG_DB, swsscommon.STATE_DB) == (0, 4, 6)
    assert swsscommon.FLEX_COUNTER_DB == swsscommon.PFC_WD_DB == 5
    assert swsscommon.APP_PORT_TABLE_NAME == "PORT_TABLE"
    assert swsscommon.CFG_PORT_CABLE_LEN_TABLE_NAME == "CABLE_LENGTH"
    assert swsscommon.STATE_PORT_TABLE_NAME == "PORT_TABLE"
    assert (swsscommon.SET_COMMAND, swsscommon.DEL_COMMAND) == ("SET", "DEL")


def test_constants_parse_strings_and_integers_only() -> None:
    text = '#define A_DB 3\n#define B_TABLE_NAME  "B" // note\n#define MACRO(x) x\n#define EXPR (1+2)\n'
    assert gen_schema.constants(text) == {"A_DB": 3, "B_TABLE_NAME": "B"}


@pytest.mark.skipif(not ARCHIVE.exists(), reason=f"no sonic-swss-common archive at {ARCHIVE}")
def test_regenerating_from_the_archive_gives_the_committed_module(tmp_path: Path) -> None:
    out = tmp_path / "schema.py"
    assert gen_schema.main([str(ARCHIVE), "--output", str(out)]) == 0
    assert out.read_text() == Path(schema.__file__).read_text()
    with tarfile.open(ARCHIVE) as archive:
        assert archive.pax_headers["comment"] == schema.SCHEMA_COMMIT
