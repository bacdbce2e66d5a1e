# The house rules of docs/architecture.md ("House rules"): which top-level folder's C++ sources
# may include headers of which other top-level folder. Read by cmake/CheckHouseRules.cmake,
# which ctest runs as `house_rules.includes`. A folder may always include its own headers;
# generated proto headers (roboloop/..., grpc/..., tensorboard/...) and third-party headers
# are not ruled. A folder named in no MAY_INCLUDE list is included by nobody else.

roboloop_house_rule(FOLDER common MAY_INCLUDE)
roboloop_house_rule(FOLDER registry MAY_INCLUDE common)
roboloop_house_rule(FOLDER kernels MAY_INCLUDE common)
roboloop_house_rule(FOLDER data MAY_INCLUDE common registry)
roboloop_house_rule(FOLDER train MAY_INCLUDE common registry data kernels)
roboloop_house_rule(FOLDER sim MAY_INCLUDE common registry data)
roboloop_house_rule(FOLDER eval MAY_INCLUDE common registry data train sim)
roboloop_house_rule(FOLDER bench MAY_INCLUDE common registry data kernels train sim eval)
roboloop_house_rule(FOLDER wiring MAY_INCLUDE common registry data kernels train sim eval)
roboloop_house_rule(FOLDER report MAY_INCLUDE common registry data train sim eval wiring)
roboloop_house_rule(FOLDER pipeline MAY_INCLUDE common registry data kernels train sim eval wiring report)
roboloop_house_rule(FOLDER cli
  MAY_INCLUDE common registry data kernels train sim eval bench wiring report pipeline)
roboloop_house_rule(FOLDER tests
  MAY_INCLUDE common registry data kernels train sim eval bench wiring report pipeline cli)

# sim and train are peers, yet sim's neural and checkpoint policies run trained policies: they
# do so only through train/torch_runtime.h, the torch-free loader of libroboloop_torch.so (the
# torch boundary of docs/architecture.md §1). Moving that boundary below both folders would remove
# this exception.
roboloop_house_rule_exception(NAME sim-runs-policies-through-the-torch-boundary
  FOLDER sim HEADER train/torch_runtime.h
  REASON "sim runs trained policies only through the torch-free runtime loader in train/")
