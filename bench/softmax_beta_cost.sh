#!/bin/bash
# The cost of softmax(beta) for the flow and the ODE (task.c, TASK_SOFTMAX_STEPS_*): CPU seconds
# (user and system, /usr/bin/time) into softmax_beta.txt, one line per solver, T and beta.
A=${AIMSWEEP:-build/aimsweep}
for solver in ode flow; do
for T in 2 3 4; do
for beta in 1 5 20; do
  /usr/bin/time -f "%U %S %e" -o t.txt timeout 900 env OPENBLAS_NUM_THREADS=1 $A single --d 20 --tau-end 0.1 --records 5 --activation "softmax($beta)" --tokens $T --solvers $solver --format csv > out.csv 2> err.txt
  rc=$?
  echo "$solver $T $beta rc=$rc $(cat t.txt | tail -1)" >> softmax_beta.txt
done; done; done
echo finished >> softmax_beta.txt
