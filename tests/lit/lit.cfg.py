# lit configuration for waferc's FileCheck tests. Each test is a file with `// RUN:` lines;
# %waferc, %wafer-opt and %waferrun name the tools of the build under test.
import os
import lit.formats

config.name = "waferc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".wir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)

site = lit_config.params.get("site")
if site:
    lit_config.load_config(config, site)

# Scratch files (%t) go to the build tree, never beside the tests.
config.test_exec_root = os.path.join(config.wf_binary_dir, "tests", "lit")

tools = config.wf_tools_dir
llvm = config.llvm_tools_dir
config.environment["PATH"] = os.pathsep.join([tools, llvm, config.environment.get("PATH", "")])
config.environment["WAFERC_TARGET_PATH"] = os.path.join(config.wf_source_dir, "targets")
config.substitutions.append(("%waferc", os.path.join(tools, "waferc")))
config.substitutions.append(("%wafer-opt", os.path.join(tools, "wafer-opt")))
config.substitutions.append(("%waferrun", os.path.join(tools, "waferrun")))
config.substitutions.append(("%examples", os.path.join(config.wf_source_dir, "examples")))
config.substitutions.append(("%builddir", config.wf_binary_dir))
