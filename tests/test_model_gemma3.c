/* test_model_gemma3: tests/test_model.c's checks on Gemma 3 270M Q4_K_M (the gemma3 recipe row): the tokenizer and
 * llama.cpp's greedy continuations of 16 prompts under the near-tie rule, and the last-position logits of two
 * prompts against scripts/ref_numpy.py's float64 forward pass (fixtures: tests/fixtures/gemma3/llamacpp/, made by
 * `scripts/gen_model_fixtures.py --model models/gemma-3-270m-q4_k_m.gguf --out-dir tests/fixtures/gemma3/llamacpp`,
 * llama-cpp-python 0.3.36; its README gives llama.cpp's own distance to the float64 reference, the bar's basis). */
#define MODEL_PATH "models/gemma-3-270m-q4_k_m.gguf"
#define FIX_DIR "tests/fixtures/gemma3/llamacpp/"
#define TEST_NAME "test_model_gemma3"
#define N_VOCAB 262144
#define LAYER_L2_MAX 2e-3 /* per layer, reference matmul: measured 1.9e-4 / 2.4e-4 */
#define REF_L2_MAX 1e-1 /* see tests/test_gemma3.c: tern's 8-bit activations at 3.0-5.0e-2 on this model */
#include "test_model.c"
