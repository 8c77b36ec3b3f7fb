"""The datasets misguard's benchmarks read, pinned to exact upstream bytes.

Every URL names a commit, so its content cannot change under the pin. Nothing here is
shipped with misguard: `misguard data fetch NAME` downloads into the user's cache, and the
licences below (none of them permits redistribution) stay the user's to honour.
"""

from __future__ import annotations

from ._catalog import DataFile, Dataset, Download, register_dataset
from ._snopes import derive_snopes_claims

_ARGUS = "https://raw.githubusercontent.com/zhrli324/ARGUS/6fa56234dcbcc919ce15068c590219f262e82656"
_LIAR = "https://raw.githubusercontent.com/nishitpatel01/Fake_News_Detection/880a2782ab627c10e4f9cf98c3d753d48439a9d1"
_CHECKTHAT = "https://raw.githubusercontent.com/sshaar/clef2020-factchecking-task2/e993f1fe34e5ecd8808ede19a4ea396013d0803d"
_SNOPES = "https://raw.githubusercontent.com/hadyer2/CS598GW-Snopes/133e97bf4dca829bd9738548552d013d28623c09"

register_dataset(Dataset(
    name="misinfotask",
    title="MisInfoTask: 108 multi-agent tasks with misinformation goals (ARGUS, ICLR 2026)",
    directory="misinfotask",
    entry="MisinfoTask.json",
    files=(DataFile("MisinfoTask.json", "6fe47a3ca1fa998be5ee9f6eb9d9e7b931be475b3db82c87c99bb7fd63467270", 581_002),),
    downloads=(Download(f"{_ARGUS}/dataset/MisinfoTask.json", path="MisinfoTask.json"),),
    license="none stated upstream: research and evaluation use, cite arXiv:2506.00509, do not redistribute",
    source="github.com/zhrli324/ARGUS at 6fa5623, dataset/MisinfoTask.json",
    verified="pinned copy has the upstream git blob id 2b3e189f",
))

register_dataset(Dataset(
    name="liar",
    title="LIAR: 12,836 PolitiFact statements with 6-way ratings (Wang, ACL 2017)",
    directory="claims/liar",
    files=(
        DataFile("train.tsv", "23ef8cb7ff57b25c941100d0744039cebc595d65a67ea190f72b330a658d8c36", 2_408_165),
        DataFile("valid.tsv", "8dd3d7ed1a11e78ed7df090c9eddb0f91147f895850c78d49dd7b4e88fd09a16", 301_556),
        DataFile("test.tsv", "ee41e2c741e0019216952625145af8c4aa8c8d3057ec68284b134267bb845e6f", 301_118),
    ),
    downloads=tuple(Download(f"{_LIAR}/liar_dataset/{split}.tsv", path=f"{split}.tsv") for split in ("train", "valid", "test")),
    license="research use only (LIAR README); the original sources keep their copyright",
    source="the files of liar_dataset.zip as kept in github.com/nishitpatel01/Fake_News_Detection at 880a278",
    verified="pinned copies have the upstream git blob ids 04b34a7c, 8d1fc7a7, a53fa254",
))

register_dataset(Dataset(
    name="checkthat2020",
    title="CLEF-2020 CheckThat! task 2: 1,197 tweets to match against 10,389 Snopes claims",
    directory="claims/checkthat2020",
    files=(
        DataFile("verified_claims.docs.tsv", "04b0e43170ca03916fa6c81b13fbfc5587483db860530b59dba9f2858f612611", 1_625_211),
        DataFile("train/tweets.queries.tsv", "2a110b8d59e5a654ca2dec4aa5cf35372604b9897f578817c6a1fdafa839fc1d", 185_470),
        DataFile("train/tweet-vclaim-pairs.qrels", "ac55470b772c7d5cd48f35762762c2fc345154e780aa8680c06bc572e955818f", 9_421),
        DataFile("dev/tweets.queries.tsv", "f2c6c8f69a7c2d897300739842081503966878d4f0c28af7aca64127c5571b20", 46_563),
        DataFile("dev/tweet-vclaim-pairs.qrels", "5c2bb709a4f154a9c9c8891da8920aa004c997b506c3b137a4518d65bd9edc2e", 2_331),
        DataFile("test/tweets.queries.tsv", "0da08900a890b8306cf31027f85e57ce75f4b69ee002e4e77e6b9a316a8499ef", 34_295),
        DataFile("test/tweet-vclaim-pairs.qrels", "177bb83b6ae212d37a694683a6519627246bc7ca03a753b02bd2d63107061bc7", 2_788),
    ),
    downloads=(
        Download(f"{_CHECKTHAT}/data/v3.zip", archive="zip"),
        Download(f"{_CHECKTHAT}/test-input/test-input.zip", archive="zip"),
    ),
    license="\"free for general research use\" (upstream README); do not redistribute",
    source="github.com/sshaar/clef2020-factchecking-task2 at e993f1f, data/v3.zip and test-input/test-input.zip",
    verified="members pinned from copies said to be unchanged from the archives; the archives "
             "themselves were not available to hash, so their layout is not pinned (members are "
             "matched by size and sha256)",
))

_SNOPES_RAW = {
    "correct-attribution": ("76f4f49978cb1ea844f26bb50879ea050a04c3f67759ae6e16abdf5cdcdcf6b0", 87_617),
    "false": ("737e49f2914be432615a488da61d0eb65311daf6f04e6595c4cc3bf71ede6c2e", 2_781_721),
    "legend": ("92a8090a5de6b16c4eecc17429f59f9ea8e0a82959ab574c34719d512cb2bed6", 76_486),
    "misattributed": ("64085c51e4bb87b36addb1977afda727f7980b57504d7d4b8f90490f0037222d", 49_300),
    "miscaptioned": ("0ccc8656cc7b0c3b36eebe4bac6d28d9e5656be9cde14b1e21f0474bcdf4f37f", 228_410),
    "mixture": ("193b9a7f4c082e09a056cc1066fff4f841449cef60e59c89ab6a9eb8e1401404", 653_682),
    "mostly-false": ("1522f3dde8708b5ba34681cf50822cad8743f178739f315bb4860306f04f9fb6", 352_566),
    "mostly-true": ("49bb1321caf6e9715d5fd203c30bc91af367a4482fd5c212c8e88cd5361ebd1d", 163_734),
    "outdated": ("0f8362b076d0a3f7e130110df944d229913524528fcff46944f19abd0e22d960", 64_502),
    "scam": ("f4f940235fe2f1d8b8f98e6cf17246e8e6c9ecf60110ba854ac1f4a868acc24a", 38_485),
    "true": ("01c7850976e8e2445c493db970814328bc908cc58563815a781f2af4bfd8e213", 758_228),
}

register_dataset(Dataset(
    name="snopes",
    title="Snopes fact-checks by rating: 9,139 records scraped in October 2020 (CS598GW)",
    directory="claims/snopes-cs598gw",
    entry="snopes_claims.jsonl",
    files=(
        *(DataFile(f"raw/{rating}-stories.json", sha, size) for rating, (sha, size) in _SNOPES_RAW.items()),
        DataFile("snopes_claims.jsonl", "2218669dcf20d0c45df20e34461bd45936a484669eafa233c17ca9e3a4b4da4c", 4_982_190,
                 derived=True),
    ),
    downloads=tuple(Download(f"{_SNOPES}/{rating}-stories.json", path=f"raw/{rating}-stories.json") for rating in _SNOPES_RAW),
    license="none stated upstream; Snopes' editorial text, copyright Snopes Media Group: research use, do not redistribute",
    source="github.com/hadyer2/CS598GW-Snopes at 133e97b, the eleven <rating>-stories.json files",
    verified="pinned raw files have the upstream git blob ids; snopes_claims.jsonl is rebuilt from "
             "them here (one JSON object per record) and matches its pin",
    derive=derive_snopes_claims,
))

register_dataset(Dataset(
    name="misinfotask-new",
    title="32 MisInfoTask-style tasks written for misguard (same format as misinfotask)",
    directory="misinfotask-new",
    entry="tasks.json",
    files=(DataFile("tasks.json", "272da75fed0321354a7ce4b3d03bcb1e4d7a0170e07d7640b948619bbd375819", 216_991),),
    license="written for misguard",
    source="misguard's own task set",
))

register_dataset(Dataset(
    name="devset-multilingual",
    title="The claim guard's development set: 60 claims, 480 disguised multilingual queries",
    directory="claims/devset-multilingual",
    files=(
        DataFile("claims_db.jsonl", "7030efd4720532c0542e5eb737f07c71a7914aae8f843da7bc97cb57e6fb9dd8", 7_326),
        DataFile("true_claims.jsonl", "6e2932e8fd303d20a877a61a28c348fec15fc336c15aaafc86713a090f656a7e", 4_674),
        DataFile("queries.jsonl", "84f4351d46c30d7ccfa79167a1d6e205fa9a4be631c366e4c782a3d4b3ce47e1", 303_630),
        DataFile("translation_sources_en.jsonl", "bdcc4fc76738d1203d20c6136a755a3f7be7cf7c24613e134fefbb98b8ceb09b", 24_505),
    ),
    license="written for misguard",
    source="misguard's own development set",
))
